"""A queue's life inside a transaction: created checked, deleted with its sources' policies
turned inactive, and counted."""

from __future__ import annotations

from dataclasses import replace

from deadletter.domain import errors, routing
from deadletter.domain.model import (
    DEFAULT_DEAD_LETTER_QUEUE,
    DEFAULT_QUEUE_QUOTA,
    Queue,
    QueueSettings,
    QueueStats,
)
from deadletter.domain.projects import tenant_of
from deadletter.engine import counters, validation
from deadletter.engine.lookups import require_queue
from deadletter.storage.base import Transaction


def create(
    tx: Transaction,
    project: str,
    name: str,
    *,
    settings: QueueSettings,
    now: float,
    quota: int | None = DEFAULT_QUEUE_QUOTA,
) -> Queue:
    """Create a queue; `quota` is the most queues the project may hold (None: no limit)."""
    if tx.get_queue(project, name) is not None:
        raise errors.QueueAlreadyExists(f"queue {name!r} already exists")
    if quota is not None and tx.count_queues(tenant_of(project)) >= quota:
        raise errors.QueueQuotaExceeded(
            f"project {tenant_of(project)!r} already holds {quota} queues in all its regions,"
            " the most one project may hold;"
            " delete one first, or ask the operator to raise the limit (serve --max-queues)"
        )
    # A new queue has no consumer tags, whatever settings it was given.
    settings = replace(settings, consumer_tags=(), tag_policies={})
    queue = Queue(project, name, checked(tx, project, name, settings, now), now, now)
    tx.insert_queue(queue)
    return queue


def checked(
    tx: Transaction, project: str, name: str, settings: QueueSettings, now: float
) -> QueueSettings:
    """`settings` validated for queue `name`, the project's default DLQ created first when
    they are its first user.

    Solace leaves #DEAD_MSG_QUEUE to an operator and discards dead messages until one creates
    it; here a policy is only accepted with its DLQ in place, so the default DLQ comes into
    being with the first policy that points at it (an operator may still create it before,
    to choose its settings)."""
    if (
        DEFAULT_DEAD_LETTER_QUEUE in routing.names(settings)
        and name != DEFAULT_DEAD_LETTER_QUEUE
        and tx.get_queue(project, DEFAULT_DEAD_LETTER_QUEUE) is None
    ):
        tx.insert_queue(Queue(project, DEFAULT_DEAD_LETTER_QUEUE, QueueSettings(), now, now))
    return validation.checked_settings(tx, project, name, settings)


def in_use(tx: Transaction, project: str, name: str) -> list[str]:
    """The other queues whose active dead-letter policy, routes or tags name queue `name`."""
    return sorted(
        source.name
        for source in tx.sources_of(project, name)
        if source.name != name and name in routing.active_targets(source.settings)
    )


def refuse_in_use(tx: Transaction, project: str, name: str, doing: str, outcome: str) -> None:
    """Refuse to `doing` queue `name` while sources name it as their DLQ (say which)."""
    sources = in_use(tx, project, name)
    if sources:
        listed = ", ".join(repr(s) for s in sources)
        raise errors.DeadLetterQueueInUse(
            f"queue {name!r} is the dead-letter queue of {listed}: {doing} it {outcome};"
            " force it to go ahead",
            tuple(sources),
        )


def delete(tx: Transaction, project: str, name: str, now: float, force: bool = False) -> bool:
    """Delete a queue and its messages. A DLQ that sources name is deleted only by force:
    those sources keep their messages, which go on being delivered without a limit, as
    their policy turns inactive (a route or a tag's own DLQ that names it turns inactive
    alike: its reason or its tag dead-letters nothing)."""
    if not force:
        refuse_in_use(
            tx,
            project,
            name,
            "deleting",
            "would turn their dead-letter policies inactive, and their poison messages would be"
            " delivered again without limit",
        )
    for source in tx.sources_of(project, name):
        if name in routing.active_targets(source.settings):
            settings = routing.without_target(source.settings, name)
            tx.update_queue(project, source.name, settings, now)
    return tx.delete_queue(project, name)


def stats(tx: Transaction, project: str, name: str, now: float) -> QueueStats:
    queue = require_queue(tx, project, name)
    retry = queue.settings.retry_policy
    counts = tx.counts(project, name, now, retry.maximum_backoff if retry else 0)
    totals = tx.counters(project, name)
    policy = queue.settings.dead_letter
    # Messages the untagged consumers are done with wait, hidden, for the tags: not theirs.
    delayed = counts.delayed
    if queue.settings.consumer_tags:
        delayed -= tx.count_default_done(project, name, now)
    return QueueStats(
        free=counts.free,
        claimed=counts.claimed,
        delayed=delayed,
        total=counts.free + counts.claimed + delayed,
        oldest=counts.oldest,
        newest=counts.newest,
        dead_lettered={
            k.removeprefix(counters.DEAD_LETTERED_PREFIX): v
            for k, v in totals.items()
            if k.startswith(counters.DEAD_LETTERED_PREFIX)
        },
        expired_dropped=totals.get(counters.EXPIRED_DROPPED, 0),
        dead_letters_expired=totals.get(counters.DEAD_LETTERS_EXPIRED, 0),
        acknowledged=totals.get(counters.ACKNOWLEDGED, 0),
        by_source=tx.count_by_source(project, name, now),
        policy_active=policy.active if policy else None,
        dropped={
            k.removeprefix(counters.DROPPED_PREFIX): v
            for k, v in totals.items()
            if k.startswith(counters.DROPPED_PREFIX)
        },
        dlq_full={
            k.removeprefix(counters.DLQ_FULL_PREFIX): v
            for k, v in totals.items()
            if k.startswith(counters.DLQ_FULL_PREFIX)
        },
    )
