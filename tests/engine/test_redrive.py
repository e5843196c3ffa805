"""Redrive tasks: back to each source or to a destination, filters, progress, cancel, restart."""

from __future__ import annotations

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import DeadLetterFilter
from deadletter.domain.provenance import Reason
from deadletter.domain.redrive import SkipReason, TaskStatus
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.engine.helpers import P, fail, send, with_dlq


def _kill(engine: Engine, queue: str, *bodies: str) -> None:
    """Send and dead-letter (max claims 1) one message per body."""
    send(engine, queue, *bodies)
    fail(engine, queue, 1)
    engine.claim(P, queue, limit=1000)


def _run(engine: Engine, task_id: str, budget: int = 1000) -> None:
    while engine.redrive_step(task_id, budget).status is TaskStatus.RUNNING:
        pass


@pytest.fixture
def two_sources(engine: Engine) -> Engine:
    with_dlq(engine, "a", "dlq", max_claims=1)
    engine.create_queue(P, "b", settings=engine.get_queue(P, "a").settings)
    _kill(engine, "a", "a1", "a2")
    _kill(engine, "b", "b1")
    return engine


def test_each_message_goes_back_to_its_own_source(two_sources: Engine) -> None:
    engine = two_sources
    task = engine.start_redrive(P, "dlq")
    assert (task.status, task.moved, task.to_move) == (TaskStatus.RUNNING, 0, 3)
    _run(engine, task.id)
    done = engine.get_task(P, "dlq", task_id=task.id)
    assert (done.status, done.moved) == (TaskStatus.COMPLETED, 3)
    assert sorted(m.body for m in engine.claim(P, "a", limit=10).messages) == [b"a1", b"a2"]
    assert [m.body for m in engine.claim(P, "b", limit=10).messages] == [b"b1"]
    assert engine.stats(P, "dlq").total == 0


def test_redriven_messages_get_a_fresh_budget_and_keep_their_history(
    two_sources: Engine,
) -> None:
    engine = two_sources
    _run(engine, engine.start_redrive(P, "dlq", where=DeadLetterFilter(source_queue="b")).id)
    claim = engine.claim(P, "b", limit=1)
    (m,) = claim.messages
    assert m.claim_count == 1
    assert m.provenance is None
    assert [e["event"] for e in m.history] == ["dead_lettered", "redriven"]
    engine.dead_letter(P, "b", held=[(m.id, claim.id)], description="still broken")
    (again,) = engine.list_dead_letters(P, "dlq", where=DeadLetterFilter(source_queue="b"))
    assert [e["event"] for e in again.history] == ["dead_lettered", "redriven", "dead_lettered"]
    assert again.provenance is not None and again.provenance.reason is Reason.REJECTED


def test_redrive_to_a_destination(two_sources: Engine) -> None:
    engine = two_sources
    engine.create_queue(P, "retry")
    _run(engine, engine.start_redrive(P, "dlq", destination="retry").id)
    assert len(engine.claim(P, "retry", limit=10).messages) == 3
    assert engine.claim(P, "a", limit=10).messages == ()


def test_filters_select_what_moves(two_sources: Engine) -> None:
    engine = two_sources
    task = engine.start_redrive(P, "dlq", where=DeadLetterFilter(source_queue="a"))
    assert task.to_move == 2
    _run(engine, task.id)
    assert [
        m.provenance.source_queue for m in engine.list_dead_letters(P, "dlq") if m.provenance
    ] == ["b"]


def test_to_move_counts_what_the_task_walks(two_sources: Engine, clock: ManualClock) -> None:
    engine = two_sources
    send(engine, "dlq", "sent here directly")  # walked, and skipped: it has no source
    send(engine, "dlq", "expired, not yet swept", ttl=60)
    clock.advance(60)
    whole = engine.start_redrive(P, "dlq")
    assert whole.to_move == 4
    _run(engine, whole.id)
    done = engine.get_task(P, "dlq", task_id=whole.id)
    assert (done.moved, done.skipped) == (3, 1)
    _kill(engine, "a", "a3")  # a1 and a2, back in a, die again with it
    _kill(engine, "b", "b2")
    from_a = DeadLetterFilter(source_queue="a")
    assert len(engine.list_dead_letters(P, "dlq", where=from_a)) == 3
    assert engine.start_redrive(P, "dlq", where=from_a).to_move == 3


def test_a_filter_with_thousands_of_ids(engine: Engine) -> None:
    with_dlq(engine, "a", "dlq", max_claims=1)
    bodies = [str(i) for i in range(2500)]
    for start in range(0, len(bodies), 500):
        _kill(engine, "a", *bodies[start : start + 500])
    dead = []
    after = 0
    while page := engine.list_dead_letters(P, "dlq", after_seq=after, limit=1000):
        dead += page
        after = page[-1].seq
    chosen = tuple(m.id for m in dead[:2100])
    task = engine.start_redrive(P, "dlq", where=DeadLetterFilter(message_ids=chosen))
    assert task.to_move == 2100
    _run(engine, task.id, budget=700)
    assert engine.get_task(P, "dlq", task_id=task.id).moved == 2100
    assert engine.stats(P, "dlq").total == 400


def test_cancel_stops_at_the_next_step(two_sources: Engine) -> None:
    engine = two_sources
    task = engine.start_redrive(P, "dlq")
    engine.redrive_step(task.id, 1)
    assert engine.cancel_redrive(P, "dlq", task_id=task.id).status is TaskStatus.CANCELLING
    assert engine.redrive_step(task.id, 10).status is TaskStatus.CANCELLED
    assert engine.get_task(P, "dlq", task_id=task.id).moved == 1
    assert engine.stats(P, "dlq").total == 2
    with pytest.raises(errors.TaskNotRunning):
        engine.cancel_redrive(P, "dlq", task_id=task.id)


def test_a_task_is_found_only_under_its_own_project_and_dlq(two_sources: Engine) -> None:
    engine = two_sources
    task = engine.start_redrive(P, "dlq")
    for project, dlq in [("another-project", "dlq"), (P, "a")]:
        with pytest.raises(errors.TaskNotFound):
            engine.get_task(project, dlq, task_id=task.id)
        with pytest.raises(errors.TaskNotFound):
            engine.cancel_redrive(project, dlq, task_id=task.id)
    assert engine.get_task(P, "dlq", task_id=task.id).status is TaskStatus.RUNNING


def test_one_active_task_per_dlq(two_sources: Engine) -> None:
    engine = two_sources
    task = engine.start_redrive(P, "dlq")
    with pytest.raises(errors.RedriveTaskActive):
        engine.start_redrive(P, "dlq")
    _run(engine, task.id)
    engine.start_redrive(P, "dlq")  # finished tasks do not count


def test_redrive_needs_a_dlq_and_a_proper_destination(two_sources: Engine) -> None:
    engine = two_sources
    with pytest.raises(errors.InvalidInput):
        engine.start_redrive(P, "a")
    with pytest.raises(errors.QueueNotFound):
        engine.start_redrive(P, "dlq", destination="nowhere")
    with pytest.raises(errors.InvalidInput):
        engine.start_redrive(P, "dlq", rate=0)


def test_a_missing_source_skips_its_messages_without_losing_them(two_sources: Engine) -> None:
    engine = two_sources
    engine.delete_queue(P, "b")
    task = engine.start_redrive(P, "dlq", where=DeadLetterFilter(source_queue="b"))
    _run(engine, task.id)
    done = engine.get_task(P, "dlq", task_id=task.id)
    (b1,) = engine.list_dead_letters(P, "dlq", where=DeadLetterFilter(source_queue="b"))
    assert (done.status, done.moved, done.skipped) == (TaskStatus.COMPLETED, 0, 1)
    assert done.skipped_messages == ((b1.id, SkipReason.SOURCE_DELETED),)
    assert engine.stats(P, "dlq").total == 3


def test_a_task_survives_a_restart(store_url: str, clock: ManualClock) -> None:
    first = open_store(store_url)
    engine = Engine(first, clock)
    with_dlq(engine, "a", "dlq", max_claims=1)
    _kill(engine, "a", *[str(i) for i in range(10)])
    task = engine.start_redrive(P, "dlq")
    engine.redrive_step(task.id, 4)
    first.close()

    second = open_store(store_url)
    try:
        restarted = Engine(second, clock)
        assert restarted.active_task_ids() == [task.id]
        _run(restarted, task.id, budget=3)
        done = restarted.get_task(P, "dlq", task_id=task.id)
        assert (done.status, done.moved) == (TaskStatus.COMPLETED, 10)
        bodies = sorted(m.body for m in restarted.claim(P, "a", limit=100).messages)
        assert bodies == sorted(str(i).encode() for i in range(10))  # none lost, none twice
        assert restarted.stats(P, "dlq").total == 0
    finally:
        second.close()


def test_a_rate_limits_each_step_to_what_accrued(two_sources: Engine, clock: ManualClock) -> None:
    engine = two_sources
    _kill(engine, "a", *[f"x{i}" for i in range(20)])  # 23 dead letters in all
    task = engine.start_redrive(P, "dlq", rate=4)
    assert engine.redrive_step(task.id, 100).moved == 0  # no time has passed
    clock.advance(0.5)
    assert engine.redrive_step(task.id, 100).moved == 2
    assert engine.redrive_step(task.id, 100).moved == 2  # nothing more accrued
    clock.advance(60)
    assert engine.redrive_step(task.id, 100).moved == 6  # idle time gives at most 1 s of burst
    clock.advance(0.25)
    assert engine.redrive_step(task.id, 100).moved == 7


def test_the_rate_holds_across_engines_on_one_store(
    two_sources: Engine, store_url: str, clock: ManualClock
) -> None:
    """Two server processes stepping one task share its rate (the pace is in the store)."""
    engine = two_sources
    _kill(engine, "a", *[f"x{i}" for i in range(20)])
    task = engine.start_redrive(P, "dlq", rate=10)
    other_store = open_store(store_url)
    try:
        other = Engine(other_store, clock)
        for _ in range(10):
            clock.advance(0.1)
            engine.redrive_step(task.id, 100)
            other.redrive_step(task.id, 100)
        # One second at 10 messages a second, whoever stepped.
        assert engine.get_task(P, "dlq", task_id=task.id).moved == 10
    finally:
        other_store.close()
