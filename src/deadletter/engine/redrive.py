"""Redrive tasks: dead letters moved back to their sources (or a destination) at a chosen pace.

A task never fails because of single messages: a dead letter that cannot go back to its own
source (it has none, the source was deleted, or the source is now a DLQ) is skipped, left in
the DLQ untouched and recorded with the task; the task walks the DLQ once, in sequence order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from deadletter.domain import errors
from deadletter.domain.model import (
    MAX_SKIPPED_RECORDED,
    DeadLetterFilter,
    Queue,
    RedriveTask,
    SkipReason,
    TaskStatus,
)
from deadletter.engine import fifo, transitions
from deadletter.engine.ids import new_id
from deadletter.engine.lookups import require_queue
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction

# A task with a rate may catch up on at most this much idle time in one step.
RATE_BURST_SECONDS = 1.0
# Absorbs float rounding of epoch-sized times (a few tenths of a microsecond).
TIME_SLACK_SECONDS = 1e-5


def start(
    tx: Transaction,
    project: str,
    dlq: str,
    destination: str | None,
    where: DeadLetterFilter,
    rate: float | None,
    now: float,
) -> RedriveTask:
    """A new running task over the dead letters `dlq` holds now (those sent later stay).

    `dlq` is a queue some policy names as its DLQ, or one that still holds dead letters (its
    sources deleted or their policies removed since)."""
    source = require_queue(tx, project, dlq)
    if not is_redrive_source(tx, project, dlq, now):
        raise errors.InvalidInput(
            f"{dlq!r} is not the dead-letter queue of any queue and holds no dead letters"
        )
    if destination is not None:
        if destination == dlq:
            raise errors.InvalidInput("a redrive cannot move messages into their own queue")
        fifo.check_destination(source, require_queue(tx, project, destination))
        if destination in tx.dead_letter_targets(project):
            raise errors.DeadLetterChainRefused(
                f"{destination!r} is a dead-letter queue; redrive to a source queue"
            )
    if any(t.dlq == dlq for t in active_tasks(tx, project)):
        raise errors.RedriveTaskActive(f"a redrive task is already running on {dlq!r}")
    max_seq = tx.max_seq(project, dlq)
    task = RedriveTask(
        id=new_id(),
        project=project,
        dlq=dlq,
        destination=destination,
        filter=where,
        rate=rate,
        status=TaskStatus.RUNNING,
        moved=0,
        to_move=tx.count_dead_letters(project, dlq, now, where, max_seq),
        max_seq=max_seq,
        started_at=now,
        updated_at=now,
    )
    tx.insert_task(task)
    return task


def is_redrive_source(tx: Transaction, project: str, name: str, now: float) -> bool:
    """Whether a redrive may start on `name`: a policy points at it, or it holds dead letters."""
    return bool(tx.sources_of(project, name) or tx.count_by_source(project, name, now))


def active_tasks(tx: Transaction, project: str) -> list[RedriveTask]:
    tasks = (tx.get_task(task_id) for task_id in tx.active_task_ids())
    return [t for t in tasks if t is not None and t.project == project]


def step(tx: Transaction, pending: Pending, task_id: str, budget: int, now: float) -> RedriveTask:
    """Move up to `budget` messages of a running task, with its progress, under its row lock."""
    task = tx.get_task(task_id, lock=True)
    if task is None:
        raise errors.TaskNotFound(f"redrive task {task_id!r} does not exist")
    if task.status is TaskStatus.CANCELLING:
        task = replace(task, status=TaskStatus.CANCELLED, updated_at=now)
        tx.update_task(task)
        return task
    if task.status is not TaskStatus.RUNNING or budget <= 0:
        return task
    allowed, paced_to = paced(task, now, budget)
    if allowed == 0:
        return task
    batch = tx.dead_letter_sources(
        task.project, task.dlq, now, task.filter, task.max_seq, allowed, task.cursor_seq
    )
    if not batch:
        task = replace(task, status=TaskStatus.COMPLETED, updated_at=now)
        tx.update_task(task)
        return task
    outcome = _outcomes(tx, task, batch)
    if isinstance(outcome, str):
        task = replace(task, status=TaskStatus.FAILED, failure_reason=outcome, updated_at=now)
        tx.update_task(task)
        return task
    fresh, skipped = outcome
    for (_, tag), (destination, ids) in fresh.items():
        event = transitions.redrive_event(destination.name, task.dlq, task.id, now, tag)
        expires = now + destination.settings.default_ttl
        tx.redrive_messages(task.project, ids, destination.name, expires, event, now, tag)
        pending.available.add((task.project, destination.name))
    count = sum(len(ids) for _, ids in fresh.values())
    if count:
        project, dlq = task.project, task.dlq
        pending.calls.append(lambda lst: lst.redriven(project, dlq, task_id, count))
    room = MAX_SKIPPED_RECORDED - len(task.skipped_messages)
    task = replace(
        task,
        moved=task.moved + count,
        skipped=task.skipped + len(skipped),
        skipped_messages=task.skipped_messages + tuple(skipped[: max(room, 0)]),
        cursor_seq=batch[-1][1],
        updated_at=paced_to(count),
    )
    tx.update_task(task)
    return task


# (queue name, consumer tag or None) -> (the queue, the ids that go back to it)
Destinations = dict[tuple[str, str | None], tuple[Queue, list[str]]]


def _outcomes(
    tx: Transaction, task: RedriveTask, batch: list[tuple[str, int, str | None, str | None]]
) -> tuple[Destinations, list[tuple[str, SkipReason]]] | str:
    """The ids of `batch` by the queue each goes back to (and the consumer tag it goes back
    to alone, if any), and those skipped with the reason; or why the whole task cannot go on
    (its named destination was deleted). Whether a dead letter may go back depends only on
    its source queue, so each source is looked at once."""
    fresh: Destinations = {}
    if task.destination is not None:
        target = tx.get_queue(task.project, task.destination)
        if target is None:
            return f"queue {task.destination!r} no longer exists"
        for mid, _, _, tag in batch:
            key = (target.name, transitions.redrive_tag(tag, target))
            fresh.setdefault(key, (target, []))[1].append(mid)
        return fresh, []
    targets = tx.dead_letter_targets(task.project)
    sources: dict[str, Queue | SkipReason] = {}
    skipped: list[tuple[str, SkipReason]] = []
    for mid, _, name, tag in batch:
        if name is None:
            skipped.append((mid, SkipReason.NO_SOURCE))
            continue
        if name not in sources:
            source = tx.get_queue(task.project, name)
            reason = transitions.redrive_skip_of(name, source, targets)
            sources[name] = (
                source
                if reason is None and source is not None
                else (reason or SkipReason.SOURCE_DELETED)
            )
        where = sources[name]
        if isinstance(where, SkipReason):
            skipped.append((mid, where))
        else:
            key = (where.name, transitions.redrive_tag(tag, where))
            fresh.setdefault(key, (where, []))[1].append(mid)
    return fresh, skipped


def fail(tx: Transaction, task_id: str, reason: str, now: float) -> RedriveTask | None:
    """Stop a task whose steps fail, keeping why; a task already finished is left as it is."""
    task = tx.get_task(task_id, lock=True)
    if task is None or task.status not in (TaskStatus.RUNNING, TaskStatus.CANCELLING):
        return task
    task = replace(task, status=TaskStatus.FAILED, failure_reason=reason[:1000], updated_at=now)
    tx.update_task(task)
    return task


def cancel(tx: Transaction, project: str, dlq: str, task_id: str, now: float) -> RedriveTask:
    """Ask a running task to stop; its next step marks it cancelled."""
    task = owned(tx.get_task(task_id, lock=True), project, dlq, task_id)
    if task.status is not TaskStatus.RUNNING:
        raise errors.TaskNotRunning(f"redrive task {task_id!r} is {task.status.value}, not RUNNING")
    task = replace(task, status=TaskStatus.CANCELLING, updated_at=now)
    tx.update_task(task)
    return task


def owned(task: RedriveTask | None, project: str, dlq: str, task_id: str) -> RedriveTask:
    """`task` if it belongs to `dlq` of `project`; a task of another is not found."""
    if task is None or task.project != project or task.dlq != dlq:
        raise errors.TaskNotFound(f"redrive task {task_id!r} does not exist")
    return task


def paced(task: RedriveTask, now: float, budget: int) -> tuple[int, Callable[[int], float]]:
    """How many messages a step may move now, and the task's new `updated_at` once it moved n.

    For a task with a rate, `updated_at` is the time up to which its allowance is spent: a step
    may move what accrued since (at most a second's worth), and advances it by n / rate. Every
    server process steps the same row under its lock, so together they keep to the rate.
    """
    if task.rate is None:
        return budget, lambda n: now
    rate = task.rate
    since = max(task.updated_at, now - RATE_BURST_SECONDS)
    allowed = min(budget, int((now - since + TIME_SLACK_SECONDS) * rate))
    return allowed, lambda n: since + n / rate
