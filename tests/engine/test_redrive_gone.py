"""Every dead letter a redrive selected is accounted for when it completes: moved, skipped
with a reason, or gone (it left the DLQ by another road while the task ran)."""

from __future__ import annotations

from deadletter.api.zaqar.serialize import task_json
from deadletter.clock import ManualClock
from deadletter.domain.model import DeadLetterFilter
from deadletter.domain.redrive import RedriveTask, TaskStatus
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, fail, send, with_dlq


def _slow_redrive_of_five(engine: Engine, clock: ManualClock) -> tuple[RedriveTask, list[str]]:
    """A redrive at one message a second over five dead letters, its first one moved."""
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", *[f"m{i}" for i in range(5)])
    fail(engine, "a", 1)
    engine.claim(P, "a", limit=1000)
    ids = [m.id for m in engine.list_dead_letters(P, "dlq")]
    task = engine.start_redrive(P, "dlq", rate=1)
    clock.advance(1)
    assert engine.redrive_step(task.id, 100).moved == 1
    return task, ids


def _run(engine: Engine, clock: ManualClock, task_id: str) -> RedriveTask:
    while (task := engine.redrive_step(task_id, 100)).status is TaskStatus.RUNNING:
        clock.advance(1)
    return task


def test_dead_letters_archived_while_it_runs_are_counted_as_gone(
    engine: Engine, clock: ManualClock
) -> None:
    # Given a slow redrive of five dead letters that has moved one
    task, ids = _slow_redrive_of_five(engine, clock)
    # When two of the rest are archived while it runs
    assert engine.archive(P, "dlq", where=DeadLetterFilter(message_ids=tuple(ids[2:4]))) == 2
    done = _run(engine, clock, task.id)
    # I expect them counted as gone: moved + skipped + gone == to_move
    assert (done.status, done.to_move, done.moved, done.skipped) == (TaskStatus.COMPLETED, 5, 3, 0)
    assert done.gone == 2
    assert done.moved + done.skipped + done.gone == done.to_move
    assert task_json(done)["gone"] == 2


def test_dead_letters_purged_while_it_runs_are_counted_as_gone(
    engine: Engine, clock: ManualClock
) -> None:
    task, ids = _slow_redrive_of_five(engine, clock)
    rest = DeadLetterFilter(message_ids=tuple(ids[1:]))
    assert engine.purge_dead_letters(P, "dlq", where=rest) == 4
    done = _run(engine, clock, task.id)
    assert (done.status, done.moved, done.skipped, done.gone) == (TaskStatus.COMPLETED, 1, 0, 4)
    assert done.moved + done.skipped + done.gone == done.to_move


def test_a_running_task_counts_nothing_gone_yet(engine: Engine, clock: ManualClock) -> None:
    # The rest of a running task's selection may still move: nothing is gone before the end.
    task, ids = _slow_redrive_of_five(engine, clock)
    engine.archive(P, "dlq", where=DeadLetterFilter(message_ids=tuple(ids[1:])))
    running = engine.get_task(P, "dlq", task_id=task.id)
    assert (running.status, running.gone) == (TaskStatus.RUNNING, 0)
