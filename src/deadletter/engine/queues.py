"""A queue's life inside a transaction: created checked, deleted with its sources' policies
turned inactive, and counted."""

from __future__ import annotations

from dataclasses import replace

from deadletter.domain import errors
from deadletter.domain.model import Queue, QueueSettings, QueueStats
from deadletter.engine import counters, validation
from deadletter.engine.lookups import require_queue
from deadletter.storage.base import Transaction


def create(tx: Transaction, project: str, name: str, settings: QueueSettings, now: float) -> Queue:
    if tx.get_queue(project, name) is not None:
        raise errors.QueueAlreadyExists(f"queue {name!r} already exists")
    checked = validation.checked_settings(tx, project, name, settings)
    queue = Queue(project, name, checked, now, now)
    tx.insert_queue(queue)
    return queue


def delete(tx: Transaction, project: str, name: str, now: float) -> bool:
    """Delete a queue and its messages. Sources that used it as DLQ keep their messages,
    which go on being delivered; their policy turns inactive."""
    for source in tx.sources_of(project, name):
        policy = source.settings.dead_letter
        if policy is not None and policy.active:
            settings = source.settings.with_changes(dead_letter=replace(policy, active=False))
            tx.update_queue(project, source.name, settings, now)
    return tx.delete_queue(project, name)


def stats(tx: Transaction, project: str, name: str, now: float) -> QueueStats:
    queue = require_queue(tx, project, name)
    counts = tx.counts(project, name, now)
    totals = tx.counters(project, name)
    policy = queue.settings.dead_letter
    return QueueStats(
        free=counts.free,
        claimed=counts.claimed,
        delayed=counts.delayed,
        total=counts.free + counts.claimed + counts.delayed,
        oldest=counts.oldest,
        newest=counts.newest,
        dead_lettered={
            k.removeprefix(counters.DEAD_LETTERED_PREFIX): v
            for k, v in totals.items()
            if k.startswith(counters.DEAD_LETTERED_PREFIX)
        },
        expired_dropped=totals.get(counters.EXPIRED_DROPPED, 0),
        acknowledged=totals.get(counters.ACKNOWLEDGED, 0),
        by_source=tx.count_by_source(project, name, now),
        policy_active=policy.active if policy else None,
        dropped={
            k.removeprefix(counters.DROPPED_PREFIX): v
            for k, v in totals.items()
            if k.startswith(counters.DROPPED_PREFIX)
        },
    )
