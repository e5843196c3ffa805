"""The worker: sweeps, and runs unlimited redrive tasks batch after batch without pausing."""

from __future__ import annotations

import threading

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.redrive import TaskStatus
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
