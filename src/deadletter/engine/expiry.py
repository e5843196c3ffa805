"""The expiry sweep: expired messages dropped, or dead-lettered where their queue asks for it."""

from __future__ import annotations

from collections import defaultdict

from deadletter.domain.model import Message, Reason
from deadletter.engine import counters, dead_letters, transitions
from deadletter.engine.events import EngineListener
from deadletter.engine.transactions import Event, Pending
from deadletter.storage.base import Transaction

# Expired messages handled per transaction; a sweep that found this many goes on at once.
SWEEP_BATCH = 1000
# Claim records are kept this long past their expiry, then deleted.
STALE_CLAIM_AGE = 3600


def sweep(tx: Transaction, pending: Pending, now: float, limit: int) -> int:
    """Handle up to `limit` expired messages; how many were found."""
    found = tx.expired(now, limit)
    by_queue: dict[tuple[str, str], list[Message]] = defaultdict(list)
    for project, m in found:
        by_queue[(project, m.queue)].append(m)
    for (project, name), messages in by_queue.items():
        queue = tx.get_queue(project, name)
        to_dlq, dropped = transitions.expiry_dead_letters(queue, messages)
        if to_dlq and queue is not None:
            dead_letters.move(tx, pending, queue, to_dlq, Reason.EXPIRED, now)
        if dropped:
            tx.delete_messages(project, name, [m.id for m in dropped])
            tx.bump_counter(project, name, counters.EXPIRED_DROPPED, len(dropped))
            pending.calls.append(_expired_event(project, name, len(dropped)))
    tx.delete_stale_claims(now - STALE_CLAIM_AGE)
    return len(found)


def _expired_event(project: str, queue: str, count: int) -> Event:
    def call(listener: EngineListener) -> None:
        listener.expired(project, queue, count)

    return call
