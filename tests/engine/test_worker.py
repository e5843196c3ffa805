"""The worker: sweeps, and runs unlimited redrive tasks batch after batch without pausing."""

from __future__ import annotations

from deadletter.clock import ManualClock
from deadletter.domain.model import TaskStatus
from deadletter.engine.engine import Engine
from deadletter.engine.worker import UNLIMITED_BATCH, Worker
from tests.engine.helpers import P, fail, send, with_dlq


def test_an_unlimited_task_reports_more_work_until_done(engine: Engine) -> None:
    with_dlq(engine, "a", "dlq", max_claims=1)
    total = UNLIMITED_BATCH + 10
    for start in range(0, total, 500):
        send(engine, "a", *[str(i) for i in range(start, min(total, start + 500))])
    fail(engine, "a", 1)
    engine.claim(P, "a", 1000)  # the second claim of each moves it
    assert engine.stats(P, "dlq").total == total
    task = engine.start_redrive(P, "dlq")
    worker = Worker(engine)
    assert worker.run_once() is True  # a full batch moved: go on without waiting
    assert engine.get_task(P, "dlq", task.id).moved == UNLIMITED_BATCH
    rounds = 0
    while worker.run_once():
        rounds += 1
        assert rounds < 10
    done = engine.get_task(P, "dlq", task.id)
    assert (done.status, done.moved) == (TaskStatus.COMPLETED, total)


def test_the_sweep_runs_on_its_interval(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "q")
    send(engine, "q", "short", ttl=5)
    clock.advance(5)
    assert Worker(engine, sweep_interval=0).run_once() is False
    assert engine.stats(P, "q").expired_dropped == 1
