"""The worker: sweeps, and runs unlimited redrive tasks batch after batch without pausing."""

from __future__ import annotations

import threading

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.redrive import Canary, TaskStatus
from deadletter.engine import worker as worker_module
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from deadletter.engine.worker import Worker
from tests.engine.helpers import P, fail, send, with_dlq


def test_an_unlimited_task_reports_more_work_until_done(engine: Engine) -> None:
    with_dlq(engine, "a", "dlq", max_claims=1)
    batch = engine.store.redrive_batch
    total = batch + 10
    for start in range(0, total, 500):
        send(engine, "a", *[str(i) for i in range(start, min(total, start + 500))])
    while engine.stats(P, "a").total:  # given back at its delivery limit, each one moves
        fail(engine, "a", 1)
    assert engine.stats(P, "dlq").total == total
    task = engine.start_redrive(P, "dlq")
    worker = Worker(engine)
    assert worker.run_once() is True  # a full batch moved: go on without waiting
    assert engine.get_task(P, "dlq", task_id=task.id).moved == batch
    rounds = 0
    while worker.run_once():
        rounds += 1
        assert rounds < 10
    done = engine.get_task(P, "dlq", task_id=task.id)
    assert (done.status, done.moved) == (TaskStatus.COMPLETED, total)


def test_the_sweep_runs_on_its_interval(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "q")
    send(engine, "q", "short", ttl=5)
    clock.advance(5)
    assert Worker(engine, sweep_interval=0).run_once() is False
    assert engine.stats(P, "q").expired_dropped == 1


def test_the_first_round_sweeps_however_short_the_machine_has_been_up(
    engine: Engine, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.create_queue(P, "q")
    send(engine, "q", "short", ttl=5)
    clock.advance(5)
    # monotonic time counts from about the boot: here, booted half a second ago
    monkeypatch.setattr(worker_module.time, "monotonic", lambda: 0.5)
    Worker(engine, sweep_interval=60).run_once()
    assert engine.stats(P, "q").expired_dropped == 1


def test_a_task_started_in_this_process_is_stepped_without_waiting_for_the_tick(
    engine: Engine,
) -> None:
    # Given a running worker that has gone idle with an hour to wait before its next round
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", "x", "y")
    fail(engine, "a", 1)
    engine.claim(P, "a", limit=10)
    done = threading.Event()

    class Done(EngineListener):
        def redriven(self, project: str, dlq: str, task_id: str, count: int) -> None:
            done.set()

    engine.add_listener(Done())
    first_round = threading.Event()

    class Watched(Worker):
        def run_once(self) -> bool:
            busy = super().run_once()
            first_round.set()
            return busy

    worker = Watched(engine, sweep_interval=3600, tick=3600)
    worker.start()
    # Only after its first round (which found nothing): the task cannot be found by it.
    assert first_round.wait(30)
    try:
        # When a redrive starts, the worker wakes and completes it
        task = engine.start_redrive(P, "dlq")
        assert done.wait(30), "the worker waited for its tick"
    finally:
        worker.stop()
    assert engine.get_task(P, "dlq", task_id=task.id).moved == 2


TICK = 1 / 16  # exact in binary: sixteen ticks make the interval


class _Looks:
    """`Engine.active_task_ids` counted, on a monotonic clock the test moves."""

    def __init__(self, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.now = 1000.0
        looked_up = engine.active_task_ids

        def counted() -> list[str]:
            self.count += 1
            return looked_up()

        monkeypatch.setattr(engine, "active_task_ids", counted)
        monkeypatch.setattr(worker_module.time, "monotonic", lambda: self.now)


def _idle_worker(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> tuple[_Looks, Worker]:
    """A worker that has had its first round, and found no task; its looks counted."""
    looks = _Looks(engine, monkeypatch)
    worker = Worker(engine, sweep_interval=1.0)
    worker.run_once()
    return looks, worker


def _dead_letters(engine: Engine, *bodies: str) -> None:
    """Queue "a" whose DLQ "dlq" holds `bodies`, each past its one delivery."""
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", *bodies)
    fail(engine, "a", 1)
    engine.claim(P, "a", limit=10)
    assert engine.stats(P, "dlq").total == len(bodies)


def test_an_idle_worker_looks_for_tasks_once_a_sweep_interval(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a worker with no task to run, which has had its first round
    looks, worker = _idle_worker(engine, monkeypatch)
    assert looks.count == 1
    # When its ticks come within the interval, no round reads the task table
    for _ in range(15):
        looks.now += TICK
        worker.run_once()
    assert looks.count == 1
    # I expect the next look once the interval has passed since the last
    looks.now += TICK
    worker.run_once()
    assert looks.count == 2


def test_a_task_another_process_starts_is_joined_at_the_next_look(
    engine: Engine, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an idle worker, and a task of one message a second started by another process on
    # the same store (its start is no event of this engine)
    looks, worker = _idle_worker(engine, monkeypatch)
    _dead_letters(engine, "x", "y", "z")
    task = Engine(engine.store, clock=clock).start_redrive(P, "dlq", rate=1.0)
    clock.advance(1)
    # When a tick comes before the interval is up, the task is not yet stepped here
    looks.now += 8 * TICK
    worker.run_once()
    assert engine.get_task(P, "dlq", task_id=task.id).moved == 0
    # I expect it stepped at the first look after the interval, and looked for at every tick
    # while it runs
    looks.now += 8 * TICK
    worker.run_once()
    assert engine.get_task(P, "dlq", task_id=task.id).moved == 1
    before = looks.count
    for _ in range(3):
        looks.now += TICK
        worker.run_once()
    assert looks.count == before + 3


def test_a_task_resumed_in_this_process_is_stepped_at_the_next_tick(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a canary task paused by its sample dying again, and a worker that has looked
    # since and found nothing running
    _dead_letters(engine, *[f"m{i}" for i in range(4)])
    task = engine.start_redrive(P, "dlq", canary=Canary(count=2, watch=60.0))
    engine.redrive_step(task.id, 1000)  # the sample goes home
    fail(engine, "a", 1)
    engine.claim(P, "a", limit=10)  # and dies again
    assert engine.redrive_step(task.id, 1000).status is TaskStatus.PAUSED
    looks, worker = _idle_worker(engine, monkeypatch)
    paused = engine.get_task(P, "dlq", task_id=task.id).moved
    # When it is resumed here, a tick later
    engine.resume_redrive(P, "dlq", task_id=task.id)
    looks.now += TICK
    worker.run_once()
    # I expect the rest moved at that tick, not at the next look a second on
    assert engine.get_task(P, "dlq", task_id=task.id).moved > paused
    assert engine.stats(P, "a").total >= 2


def test_a_task_cancelled_in_this_process_ends_at_the_next_tick(
    engine: Engine, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a task another process started, which this idle worker has not looked at since
    looks, worker = _idle_worker(engine, monkeypatch)
    _dead_letters(engine, "x", "y")
    task = Engine(engine.store, clock=clock).start_redrive(P, "dlq", rate=1.0)
    # When it is cancelled here, a tick later
    engine.cancel_redrive(P, "dlq", task_id=task.id)
    looks.now += TICK
    worker.run_once()
    # I expect it ended at that tick, nothing moved
    ended = engine.get_task(P, "dlq", task_id=task.id)
    assert (ended.status, ended.moved) == (TaskStatus.CANCELLED, 0)
