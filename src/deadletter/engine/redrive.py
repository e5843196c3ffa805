"""Redrive tasks: dead letters moved back to their sources (or a destination) at a chosen pace."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from deadletter.domain import errors
from deadletter.domain.model import DeadLetterFilter, Message, Queue, RedriveTask, TaskStatus
from deadletter.engine import transitions
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
    """A new running task over the dead letters `dlq` holds now (those sent later stay)."""
    require_queue(tx, project, dlq)
    if not tx.sources_of(project, dlq):
        raise errors.InvalidInput(f"{dlq!r} is not the dead-letter queue of any queue")
    if destination is not None:
        if destination == dlq:
            raise errors.InvalidInput("a redrive cannot move messages into their own queue")
        require_queue(tx, project, destination)
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
    batch = tx.dead_letters(
        task.project, task.dlq, now, task.filter, task.max_seq, allowed, lock=True
    )
    if not batch:
        task = replace(task, status=TaskStatus.COMPLETED, updated_at=now)
        tx.update_task(task)
        return task
    fresh, failure = _sent_back(tx, task, batch, now)
    if fresh:
        tx.delete_messages(task.project, task.dlq, [m.id for m in batch[: len(fresh)]])
        tx.insert_messages(task.project, fresh)
        for name in {m.queue for m in fresh}:
            pending.available.add((task.project, name))
        count = len(fresh)
        project, dlq = task.project, task.dlq
        pending.calls.append(lambda lst: lst.redriven(project, dlq, task_id, count))
    task = replace(task, moved=task.moved + len(fresh), updated_at=paced_to(len(fresh)))
    if failure is not None:
        task = replace(task, status=TaskStatus.FAILED, failure_reason=failure)
    tx.update_task(task)
    return task


def _sent_back(
    tx: Transaction, task: RedriveTask, batch: list[Message], now: float
) -> tuple[list[Message], str | None]:
    """The leading messages of `batch` as redriven to their destination, up to the first that
    cannot be, and why that one cannot (None when all can)."""
    destinations: dict[str, Queue] = {}
    fresh: list[Message] = []
    for m in batch:
        target = task.destination or (m.provenance.source_queue if m.provenance else None)
        if target is None:
            return fresh, f"message {m.id} has no source queue; give a destination"
        if target not in destinations:
            queue = tx.get_queue(task.project, target)
            if queue is None:
                return fresh, f"queue {target!r} no longer exists"
            destinations[target] = queue
        fresh.append(
            transitions.redriven(m, new_id(), destinations[target], task.dlq, task.id, now)
        )
    return fresh, None


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
