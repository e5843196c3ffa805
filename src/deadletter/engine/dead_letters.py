"""Dead-lettering: moving messages from a source queue to its DLQ, for whatever reason."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from deadletter.domain import errors
from deadletter.domain.model import Message, Queue, Reason
from deadletter.engine import counters, tags, transitions
from deadletter.engine.ids import new_id
from deadletter.engine.lookups import each_held, held_rows, require_queue
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction


def move(
    tx: Transaction,
    pending: Pending,
    source: Queue,
    messages: Sequence[Message],
    reason: Reason,
    now: float,
    description: str | None = None,
    error: str | None = None,
) -> list[Message]:
    """Move messages from `source` to its DLQ: visible, unclaimed, with their provenance, in
    the order of their deaths as given (a sweep gives them by expiry), except that a FIFO
    queue's move in the order they had there, so its DLQ keeps each group's order. The caller
    has checked that `source` has an active policy.

    On a queue with consumer tags the untagged consumers' dead letters are copies: the
    message stays for the tags (except when it expired, which ends it for every group)."""
    policy = source.settings.dead_letter
    assert policy is not None and policy.active, "callers check the policy"
    dlq = require_queue(tx, source.project, policy.target)
    moved = [
        transitions.dead_lettered(m, source, dlq, reason, now, description, error)
        for m in (sorted(messages, key=lambda m: m.seq) if source.settings.fifo else messages)
    ]
    if source.settings.consumer_tags and reason is not Reason.EXPIRED:
        moved = [replace(m, id=new_id()) for m in moved]
        tx.insert_messages(source.project, moved)  # copies: the message stays for the tags
        tags.finish_default(tx, source, messages)
    else:
        tx.move_messages(source.project, moved)
        if source.settings.consumer_tags:
            tx.forget_tag_states([m.id for m in messages])
    tx.bump_counter(source.project, source.name, counters.dead_lettered(reason), len(moved))
    announce(pending, source.project, source.name, dlq.name, reason, len(moved))
    return moved


def announce(
    pending: Pending, project: str, source: str, dlq: str, reason: Reason, count: int
) -> None:
    """Once committed, `count` new dead letters in `dlq` wake its consumers and are told to
    the listeners."""
    pending.available.add((project, dlq))
    pending.calls.append(lambda lst: lst.dead_lettered(project, source, dlq, reason.value, count))


def past_limit(
    tx: Transaction,
    pending: Pending,
    source: Queue,
    messages: Sequence[Message],
    reason: Reason,
    now: float,
) -> list[Message]:
    """Messages of `source` past the limit of `reason` leave it: the eligible ones to the DLQ
    (returned as moved), the others dropped and counted, never silently. The caller has
    checked that `source` has an active policy."""
    eligible, not_eligible = transitions.split_eligible(list(messages))
    if not_eligible and source.settings.consumer_tags and reason is not Reason.EXPIRED:
        # Given up by the untagged consumers only: still there for the tags.
        tags.finish_default(tx, source, not_eligible)
        tx.bump_counter(source.project, source.name, counters.dropped(reason), len(not_eligible))
    elif not_eligible:
        drop(tx, pending, source.project, source.name, not_eligible, reason)
    if not eligible:
        return []
    return move(tx, pending, source, eligible, reason, now)


def drop(
    tx: Transaction,
    pending: Pending,
    project: str,
    queue: str,
    messages: Sequence[Message],
    reason: Reason,
) -> None:
    """Delete messages not eligible for the DLQ that went past the limit of `reason`."""
    count = tx.delete_messages(project, queue, [m.id for m in messages])
    tx.bump_counter(project, queue, counters.dropped(reason), count)
    pending.calls.append(lambda lst: lst.dropped(project, queue, reason.value, count))


def reject(
    tx: Transaction,
    pending: Pending,
    project: str,
    queue_name: str,
    held: Sequence[tuple[str, str]],
    now: float,
    description: str | None,
    error: str | None,
) -> list[Message]:
    """A consumer holding the claims moves messages to the DLQ (reason `rejected`); all the
    pairs must be held, or nothing moves."""
    queue = require_queue(tx, project, queue_name)
    policy = queue.settings.dead_letter
    if queue_name in tx.dead_letter_targets(project):
        raise errors.NoActiveDeadLetterPolicy(
            f"{queue_name!r} is a dead-letter queue; its messages cannot be dead-lettered"
        )
    if policy is None or not policy.active:
        raise errors.NoActiveDeadLetterPolicy(
            f"queue {queue_name!r} has no active dead-letter policy"
        )
    # A pair listed twice is one message: moved, and counted, once.
    pairs = dict.fromkeys(held)
    found = held_rows(tx, project, queue_name, [mid for mid, _ in pairs], now)
    messages = each_held(found, pairs, now)
    return move(tx, pending, queue, messages, Reason.REJECTED, now, description, error)
