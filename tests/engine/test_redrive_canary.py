"""Redrive with a canary: a sample goes first, is watched by the engine's clock, and the task
either goes on with the rest or pauses with the reason, never both."""

from __future__ import annotations

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import DeadLetterFilter
from deadletter.domain.provenance import Reason
from deadletter.domain.redrive import Canary, CanaryDecision, RedriveTask, TaskStatus
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from tests.engine.helpers import P, fail, send, with_dlq

WATCH = 60.0


@pytest.fixture
def ten_dead(engine: Engine) -> Engine:
    """Given "a" whose DLQ is "dlq" (one delivery allowed) and ten of its dead letters."""
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", *[f"m{i}" for i in range(10)])
    fail(engine, "a", 1)
    engine.claim(P, "a", limit=1000)  # each was delivered once already: all move to the DLQ
    assert engine.stats(P, "dlq").total == 10
    return engine


def _step(engine: Engine, task: RedriveTask) -> RedriveTask:
    return engine.redrive_step(task.id, 1000)


def _still_failing(engine: Engine, queue: str) -> None:
    """The consumer of `queue` fails every message again: it goes back to the DLQ."""
    fail(engine, queue, 1)
    engine.claim(P, queue, limit=1000)


def _fixed(engine: Engine, queue: str) -> int:
    """The consumer of `queue` now handles every message."""
    claim = engine.claim(P, queue, limit=1000)
    engine.delete_messages(P, queue, ids=[m.id for m in claim.messages])
    return len(claim.messages)


def test_a_still_failing_pattern_pauses_after_the_sample_and_moves_nothing_else(
    ten_dead: Engine, clock: ManualClock
) -> None:
    engine = ten_dead
    task = engine.start_redrive(P, "dlq", canary=Canary(count=3, watch=WATCH))
    # The first step moves the sample only, and starts the watch.
    task = _step(engine, task)
    assert (task.status, task.moved) == (TaskStatus.RUNNING, 3)
    assert task.canary is not None and task.canary.watch_until == clock.now() + WATCH
    assert len(task.canary.sample_ids) == 3
    assert engine.stats(P, "a").total == 3
    # Within the watch nothing else moves.
    clock.advance(WATCH / 2)
    assert _step(engine, task).moved == 3
    # The sample dies again: the next step pauses the task, before the watch is over.
    _still_failing(engine, "a")
    task = _step(engine, task)
    assert task.status is TaskStatus.PAUSED
    assert task.canary is not None
    assert (task.canary.decision, task.canary.redeaths) == (CanaryDecision.PAUSED, 3)
    assert task.canary.reason == "3 of 3 canaries died again"
    # Paused, it moves nothing more, however long it waits; the rest is still in the DLQ.
    clock.advance(WATCH * 2)
    assert _step(engine, task).moved == 3
    assert task.id not in engine.active_task_ids()
    stored = engine.get_task(P, "dlq", task_id=task.id)
    assert (stored.status, stored.moved, stored.canary) == (TaskStatus.PAUSED, 3, task.canary)
    assert engine.stats(P, "dlq").total == 10
    assert engine.stats(P, "a").total == 0


def test_a_fixed_pattern_goes_on_with_the_rest_once_the_watch_is_over(
    ten_dead: Engine, clock: ManualClock
) -> None:
    engine = ten_dead
    task = _step(engine, engine.start_redrive(P, "dlq", canary=Canary(percent=25, watch=WATCH)))
    assert task.canary is not None and task.canary.size == 3  # 25% of 10, rounded up
    assert _fixed(engine, "a") == 3
    clock.advance(WATCH - 1)
    task = _step(engine, task)
    assert (task.status, task.moved) == (TaskStatus.RUNNING, 3)
    clock.advance(1)
    task = _step(engine, task)
    assert task.canary is not None and task.canary.decision is CanaryDecision.CONTINUED
    assert task.canary.redeaths == 0
    while task.status is TaskStatus.RUNNING:
        task = _step(engine, task)
    assert (task.status, task.moved) == (TaskStatus.COMPLETED, 10)
    assert _fixed(engine, "a") == 7
    assert engine.stats(P, "dlq").total == 0


def test_re_deaths_up_to_the_threshold_let_the_task_go_on(
    ten_dead: Engine, clock: ManualClock
) -> None:
    engine = ten_dead
    canary = Canary(count=4, watch=WATCH, max_redeath=50)
    task = _step(engine, engine.start_redrive(P, "dlq", canary=canary))
    # Two of the four die again (50%, not more than 50%): the task goes on after the watch.
    claim = engine.claim(P, "a", limit=2)
    engine.dead_letter(
        P, "a", held=[(m.id, claim.id) for m in claim.messages], description="still broken"
    )
    assert _step(engine, task).status is TaskStatus.RUNNING
    clock.advance(WATCH)
    task = _step(engine, task)
    assert task.canary is not None
    assert (task.canary.decision, task.canary.redeaths) == (CanaryDecision.CONTINUED, 2)
    # A third death after the verdict changes nothing: the verdict was given.
    claim = engine.claim(P, "a", limit=1)
    engine.dead_letter(
        P, "a", held=[(m.id, claim.id) for m in claim.messages], description="still broken"
    )
    while task.status is TaskStatus.RUNNING:
        task = _step(engine, task)
    assert task.status is TaskStatus.COMPLETED


def test_dead_letters_of_other_tasks_and_new_failures_are_not_counted(
    ten_dead: Engine, clock: ManualClock
) -> None:
    engine = ten_dead
    task = _step(engine, engine.start_redrive(P, "dlq", canary=Canary(count=2, watch=WATCH)))
    # New failures of "a" arrive in the DLQ during the watch; the sample is handled.
    send(engine, "a", "new1", "new2")
    _fixed(engine, "a")  # the two canaries and the two new ones are consumed...
    send(engine, "a", "new3")
    _still_failing(engine, "a")  # ...and a new message dies: not one of the sample
    clock.advance(WATCH)
    task = _step(engine, task)
    assert task.canary is not None
    assert (task.canary.decision, task.canary.redeaths) == (CanaryDecision.CONTINUED, 0)


@pytest.mark.parametrize(
    "where",
    [
        DeadLetterFilter(source_queue="b"),
        DeadLetterFilter(reason=Reason.REJECTED),
        DeadLetterFilter(since=1.0),  # replaced by the time "b" died, below
        DeadLetterFilter(message_ids=()),  # replaced by the ids of "b"'s dead letters
    ],
    ids=["source", "reason", "time", "ids"],
)
def test_the_canary_samples_only_what_the_filter_selects(
    ten_dead: Engine, clock: ManualClock, where: DeadLetterFilter
) -> None:
    # Given, beside "a"'s ten, four dead letters of "b" rejected by its consumer later
    engine = ten_dead
    engine.create_queue(P, "b", settings=engine.get_queue(P, "a").settings)
    clock.advance(10)
    b_died_at = clock.now()
    send(engine, "b", "b0", "b1", "b2", "b3")
    claim = engine.claim(P, "b", limit=10)
    engine.dead_letter(
        P, "b", held=[(m.id, claim.id) for m in claim.messages], description="rejected"
    )
    b_ids = tuple(
        m.id
        for m in engine.list_dead_letters(P, "dlq")
        if m.provenance and m.provenance.source_queue == "b"
    )
    if where.since is not None:
        where = DeadLetterFilter(since=b_died_at)
    if where.message_ids is not None:
        where = DeadLetterFilter(message_ids=b_ids)
    # When a canary of two runs over them and "b" is fixed
    task = engine.start_redrive(P, "dlq", where=where, canary=Canary(count=2, watch=WATCH))
    assert task.to_move == 4
    task = _step(engine, task)
    assert task.canary is not None and set(task.canary.sample_ids) <= set(b_ids)
    assert (engine.stats(P, "a").total, engine.stats(P, "b").total) == (0, 2)
    clock.advance(WATCH)
    while task.status is TaskStatus.RUNNING:
        task = _step(engine, task)
    # Then only "b"'s dead letters moved
    assert (task.status, task.moved) == (TaskStatus.COMPLETED, 4)
    assert (engine.stats(P, "a").total, engine.stats(P, "b").total) == (0, 4)


def test_a_sample_larger_than_the_selection_is_the_whole_selection(
    ten_dead: Engine, clock: ManualClock
) -> None:
    engine = ten_dead
    task = _step(engine, engine.start_redrive(P, "dlq", canary=Canary(count=50, watch=WATCH)))
    assert task.canary is not None and (task.canary.sample, task.moved) == (10, 10)
    assert task.canary.watch_until == clock.now() + WATCH
    _still_failing(engine, "a")
    task = _step(engine, task)
    assert task.status is TaskStatus.PAUSED
    assert task.canary is not None and task.canary.reason == "10 of 10 canaries died again"


def test_a_canary_over_an_empty_selection_completes_without_watching(
    ten_dead: Engine,
) -> None:
    engine = ten_dead
    where = DeadLetterFilter(source_queue="elsewhere")
    task = engine.start_redrive(P, "dlq", where=where, canary=Canary(percent=10, watch=WATCH))
    assert task.to_move == 0
    assert _step(engine, task).status is TaskStatus.COMPLETED


def test_the_verdict_names_the_pattern(ten_dead: Engine) -> None:
    engine = ten_dead
    canary = Canary(count=1, watch=WATCH, pattern_id="p-123")
    task = _step(engine, engine.start_redrive(P, "dlq", canary=canary))
    _still_failing(engine, "a")
    task = _step(engine, task)
    assert task.canary is not None
    assert task.canary.reason == "1 of 1 canaries died again: pattern p-123 still failing"


def test_a_paused_task_is_cancelled_at_once_and_frees_the_dlq(ten_dead: Engine) -> None:
    engine = ten_dead
    task = _step(engine, engine.start_redrive(P, "dlq", canary=Canary(count=1, watch=WATCH)))
    _still_failing(engine, "a")
    assert _step(engine, task).status is TaskStatus.PAUSED
    # A paused task does not hold the DLQ: a new redrive may start once the cause is fixed.
    other = engine.start_redrive(P, "dlq")
    engine.cancel_redrive(P, "dlq", task_id=other.id)
    assert engine.cancel_redrive(P, "dlq", task_id=task.id).status is TaskStatus.CANCELLED
    with pytest.raises(errors.TaskNotRunning):
        engine.cancel_redrive(P, "dlq", task_id=task.id)


@pytest.mark.parametrize(
    "canary",
    [
        Canary(),
        Canary(count=1, percent=10),
        Canary(count=0),
        Canary(percent=0),
        Canary(percent=100.5),
        Canary(count=1, watch=0),
        Canary(count=1, watch=86_401),
        Canary(count=1, max_redeath=-1),
        Canary(count=1, max_redeath=101),
    ],
)
def test_a_canary_out_of_range_is_refused_before_anything_is_written(
    ten_dead: Engine, canary: Canary
) -> None:
    with pytest.raises(errors.InvalidInput):
        ten_dead.start_redrive(P, "dlq", canary=canary)
    assert ten_dead.list_tasks(P, "dlq") == []


def test_the_worker_decides_by_the_engine_clock_and_does_not_spin_while_watching(
    ten_dead: Engine, clock: ManualClock
) -> None:
    engine = ten_dead
    task = engine.start_redrive(P, "dlq", canary=Canary(count=3, watch=WATCH))
    worker = Worker(engine, sweep_interval=3600)
    # The sample moves; watching, the task has nothing to do until time passes.
    assert worker.run_once() is False
    assert engine.get_task(P, "dlq", task_id=task.id).moved == 3
    assert worker.run_once() is False
    _fixed(engine, "a")
    clock.advance(WATCH)
    while worker.run_once():
        pass
    done = engine.get_task(P, "dlq", task_id=task.id)
    assert (done.status, done.moved) == (TaskStatus.COMPLETED, 10)
