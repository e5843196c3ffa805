"""The expiry sweep: expired messages dropped, or dead-lettered where their queue asks for it;
messages whose last allowed claim lapsed in a consumer group moved to the DLQ for it."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace

from deadletter.domain.model import Message
from deadletter.domain.provenance import Reason
from deadletter.engine import counters, dead_letters, groups, transitions
from deadletter.engine.events import EngineListener
from deadletter.engine.groups import ConsumerGroup, DefaultGroup
from deadletter.engine.transactions import Event, Pending
from deadletter.storage.base import Transaction

log = logging.getLogger(__name__)

# Expired messages handled per transaction; a sweep that found this many goes on at once.
SWEEP_BATCH = 1000
# Claim records are kept this long past their expiry, then deleted.
STALE_CLAIM_AGE = 3600
# A claimed or delayed message is settled as visible once it has been visible this long.
# Settling locks the row, and a consumer's claim skips a locked row: a message given back
# with no delay and claimed again at once (SQS's visibility 0) would come back empty whenever
# a sweep held it. Left alone for a second, it is the consumers' first; stats count it as
# visible meanwhile (`counts`), from the kept counts less those not yet settled.
SETTLE_AFTER = 1.0
# An expired message that a full DLQ refused lives this much longer, claimable, and is tried
# again then.
DLQ_FULL_RETRY = 60.0


def sweep(tx: Transaction, pending: Pending, now: float, limit: int) -> int:
    """Handle up to `limit` expired messages, up to `limit` lapsed last claims and up to
    `limit` hidden messages become visible; how many were found of the largest kind (`limit`
    means there may be more)."""
    found = tx.expired(now, limit)
    for (project, name), messages in _by_queue(found).items():
        _expired(tx, pending, project, name, messages=messages, now=now)
    due = tx.due_dead_letters(now, limit)
    by_group: dict[tuple[str, str, str | None], list[Message]] = defaultdict(list)
    for project, tag, m in due:
        by_group[(project, m.queue, tag)].append(m)
    for (project, name, tag), messages in by_group.items():
        queue = tx.get_queue(project, name)
        if queue is not None:
            _lapsed_last_claims(tx, pending, groups.named(queue, tag), messages, now)
    # Claims that lapsed and delays that ended are noted, so that stats stay flat.
    settled = tx.settle_hidden(now - SETTLE_AFTER, limit)
    tx.delete_stale_claims(now - STALE_CLAIM_AGE)
    return max(len(found), len(due), settled)


def _expired(
    tx: Transaction,
    pending: Pending,
    project: str,
    name: str,
    *,
    messages: list[Message],
    now: float,
) -> None:
    """One queue's expired messages: dead-lettered where the queue asks for it, else dropped."""
    queue = tx.get_queue(project, name)
    to_dlq, not_eligible, dropped = transitions.expiry_dead_letters(queue, messages)
    kept: list[Message] = []
    if to_dlq and queue is not None:
        group = DefaultGroup(queue)
        kept = dead_letters.move(
            tx, pending, group, messages=to_dlq, reason=Reason.EXPIRED, now=now
        ).kept
        # Refused by a full DLQ: they live on, claimable, and try again later.
        tx.extend_lives(project, [replace(m, expires_at=now + DLQ_FULL_RETRY) for m in kept])
    if not_eligible and queue is not None:
        DefaultGroup(queue).drop(tx, pending, not_eligible, Reason.EXPIRED)
    gone = len(dropped) + len(not_eligible)
    if dropped:
        tx.delete_messages(project, name, [m.id for m in dropped])
    if queue is not None and queue.settings.consumer_tags:
        kept_ids = {m.id for m in kept}
        tx.forget_tag_states([m.id for m in messages if m.id not in kept_ids])
    if gone:
        tx.bump_counter(project, name, counters.EXPIRED_DROPPED, gone)
        pending.calls.append(_expired_event(project, name, gone))
    dead = [m for m in dropped if m.provenance is not None]
    if dead:
        tx.bump_counter(project, name, counters.DEAD_LETTERS_EXPIRED, len(dead))
        pending.calls.append(_dead_letters_expired_event(project, name, dead))


def _lapsed_last_claims(
    tx: Transaction, pending: Pending, group: ConsumerGroup, messages: list[Message], now: float
) -> None:
    """Messages whose last allowed claim in `group` lapsed unacknowledged go to the DLQ now,
    as the group's next claim would move them. Those that expired are the expiry's; those
    whose policy changed since their claim (removed, inactive, a higher limit) lose the mark
    and wait for a claim."""
    policy = group.policy(Reason.MAX_CLAIMS)
    live = [m for m in messages if m.expires_at > now]
    spent = [m for m in live if transitions.poisoned(m, policy)]
    # Those a full DLQ refuses lose the mark too, and wait for a claim.
    moved = dead_letters.past_limit(
        tx, pending, group, messages=spent, reason=Reason.MAX_CLAIMS, now=now
    )
    spent_ids = {m.id for m in spent} - {m.id for m in moved.kept}
    group.hold(tx, [replace(m, dead_letter_due_at=None) for m in live if m.id not in spent_ids])


def _by_queue(found: Iterable[tuple[str, Message]]) -> dict[tuple[str, str], list[Message]]:
    by_queue: dict[tuple[str, str], list[Message]] = defaultdict(list)
    for project, m in found:
        by_queue[(project, m.queue)].append(m)
    return by_queue


def _dead_letters_expired_event(project: str, dlq: str, dead: list[Message]) -> Event:
    count = len(dead)
    sources = sorted({m.provenance.source_queue for m in dead if m.provenance is not None})

    def call(listener: EngineListener) -> None:
        listener.dead_letters_expired(project, dlq, sources, count)

    return call


class DeadLetterExpiryLog(EngineListener):
    """Logs every expiry of dead letters: the last of messages that failed leaves without a
    consumer, which an operator must be able to find afterwards (counted as well, in the
    DLQ's stats and the metrics)."""

    def dead_letters_expired(self, project: str, dlq: str, sources: list[str], count: int) -> None:
        log.warning(
            "%d dead letter(s) of %s expired and were dropped",
            count,
            dlq,
            extra={"project": project, "queue": dlq, "sources": sources, "count": count},
        )


def _expired_event(project: str, queue: str, count: int) -> Event:
    def call(listener: EngineListener) -> None:
        listener.expired(project, queue, count)

    return call
