"""Dead-lettering: a consumer group's messages to its queue's DLQ, for whatever reason."""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.domain import errors
from deadletter.domain.model import ErrorDetails, Message, Reason
from deadletter.engine import transitions
from deadletter.engine.groups import ConsumerGroup
from deadletter.engine.lookups import each_held, require_queue
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction


def move(
    tx: Transaction,
    pending: Pending,
    group: ConsumerGroup,
    messages: Sequence[Message],
    reason: Reason,
    now: float,
    description: str | None = None,
    error: ErrorDetails | None = None,
) -> list[Message]:
    """Move messages from `group`'s queue to its DLQ: visible, unclaimed, with their
    provenance (naming the group if it is a tag), in the order of their deaths as given (a
    sweep gives them by expiry), except that a FIFO queue's move in the order they had there,
    so its DLQ keeps each group's order. The caller has checked that the queue has an active
    policy. Where other groups still need a message, its dead letter is a copy
    (`ConsumerGroup.to_dead_letter_queue`)."""
    source = group.queue
    policy = source.settings.dead_letter
    assert policy is not None and policy.active, "callers check the policy"
    dlq = require_queue(tx, source.project, policy.target)
    ordered = sorted(messages, key=lambda m: m.seq) if source.settings.fifo else messages
    dead = [
        transitions.dead_lettered(m, source, dlq, reason, now, description, error, group.tag)
        for m in ordered
    ]
    stored = group.to_dead_letter_queue(tx, pending, ordered, dead, reason)
    if stored:
        announce(pending, source.project, source.name, dlq.name, reason, len(stored))
    return stored


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
    group: ConsumerGroup,
    messages: Sequence[Message],
    reason: Reason,
    now: float,
) -> list[Message]:
    """Messages `group` delivered past the limit of `reason` leave it: the eligible ones to
    the DLQ (returned as moved), the others dropped and counted, never silently. The caller
    has checked that the queue has an active policy."""
    eligible, not_eligible = transitions.split_eligible(list(messages))
    if not_eligible:
        group.drop(tx, pending, not_eligible, reason)
    if not eligible:
        return []
    return move(tx, pending, group, eligible, reason, now)


def reject(
    tx: Transaction,
    pending: Pending,
    group: ConsumerGroup,
    held: Sequence[tuple[str, str]],
    now: float,
    description: str | None,
    error: ErrorDetails | None,
) -> list[Message]:
    """A consumer holding the claims moves messages to the DLQ (reason `rejected`); all the
    pairs must be held, or nothing moves."""
    queue = group.queue
    policy = queue.settings.dead_letter
    if queue.name in tx.dead_letter_targets(queue.project):
        raise errors.NoActiveDeadLetterPolicy(
            f"{queue.name!r} is a dead-letter queue; its messages cannot be dead-lettered"
        )
    if policy is None or not policy.active:
        raise errors.NoActiveDeadLetterPolicy(
            f"queue {queue.name!r} has no active dead-letter policy"
        )
    # A pair listed twice is one message: moved, and counted, once.
    pairs = dict.fromkeys(held)
    found = group.held(tx, [mid for mid, _ in pairs], now)
    messages = each_held(found, pairs, now)
    return move(tx, pending, group, messages, Reason.REJECTED, now, description, error)


def not_requeued(
    tx: Transaction, pending: Pending, group: ConsumerGroup, message: Message, now: float
) -> list[Message]:
    """A held message its consumer gives back not to be delivered again (RabbitMQ's nack with
    requeue=false): to the DLQ at once with reason `rejected` where the queue has an active
    policy (dropped and counted if it is not eligible), else dropped and counted, as RabbitMQ
    drops it without a dead-letter exchange; the dead letter, if there is one."""
    policy = group.queue.settings.dead_letter
    if policy is not None and policy.active:
        return past_limit(tx, pending, group, [message], Reason.REJECTED, now)
    group.drop(tx, pending, [message], Reason.REJECTED)
    return []
