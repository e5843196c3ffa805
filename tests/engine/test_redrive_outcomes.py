"""A redrive never fails because of single messages: each is moved, or skipped with a reason
and left in the DLQ; a DLQ no policy points at any more can still be redriven."""

from __future__ import annotations

import pytest

from deadletter.domain import errors
from deadletter.domain.model import DeadLetterFilter, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.redrive import SkipReason, TaskStatus
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, fail, send, with_dlq


def _kill(engine: Engine, queue: str, *bodies: str) -> None:
    send(engine, queue, *bodies)
    fail(engine, queue, 1)


def _run(engine: Engine, task_id: str, budget: int = 1000) -> None:
    while engine.redrive_step(task_id, budget).status is TaskStatus.RUNNING:
        pass


@pytest.fixture
def mixed(engine: Engine) -> Engine:
    """DLQ `d` holds one message sent straight in, then two dead letters from `s`."""
    with_dlq(engine, "s", "d", max_claims=1)
    send(engine, "d", "direct")
    _kill(engine, "s", "s1", "s2")
    return engine


def test_messages_without_a_source_are_skipped_and_the_others_move(mixed: Engine) -> None:
    engine = mixed
    # Given a DLQ holding a message with no source and two dead letters from s
    task = engine.start_redrive(P, "d")
    # When the task runs, in small steps
    _run(engine, task.id, budget=1)
    # I expect the dead letters back in s, the other skipped, still in d, untouched
    done = engine.get_task(P, "d", task_id=task.id)
    (direct,) = engine.list_dead_letters(P, "d")
    assert direct.body == b"direct" and direct.claim_count == 0
    assert (done.status, done.moved, done.skipped) == (TaskStatus.COMPLETED, 2, 1)
    assert done.skipped_messages == ((direct.id, SkipReason.NO_SOURCE),)
    assert done.failure_reason is None
    assert sorted(m.body for m in engine.claim(P, "s", limit=10).messages) == [b"s1", b"s2"]


def test_a_deleted_source_skips_only_its_own_messages(engine: Engine) -> None:
    with_dlq(engine, "a", "d", max_claims=1)
    engine.create_queue(P, "b", settings=engine.get_queue(P, "a").settings)
    _kill(engine, "a", "a1")
    _kill(engine, "b", "b1")
    engine.delete_queue(P, "a")
    task = engine.start_redrive(P, "d")
    _run(engine, task.id)
    done = engine.get_task(P, "d", task_id=task.id)
    (a1,) = engine.list_dead_letters(P, "d")
    assert (done.status, done.moved) == (TaskStatus.COMPLETED, 1)
    assert done.skipped_messages == ((a1.id, SkipReason.SOURCE_DELETED),)
    assert [m.body for m in engine.claim(P, "b", limit=10).messages] == [b"b1"]


def test_a_source_that_became_a_dlq_is_skipped(engine: Engine) -> None:
    with_dlq(engine, "a", "d", max_claims=1)
    _kill(engine, "a", "a1")
    # a stops dead-lettering and becomes the DLQ of x
    engine.change_settings(P, "a", change=lambda q: q.settings.with_changes(dead_letter=None))
    engine.create_queue(P, "x", settings=QueueSettings(dead_letter=DeadLetterPolicy("a", 1)))
    task = engine.start_redrive(P, "d")
    _run(engine, task.id)
    done = engine.get_task(P, "d", task_id=task.id)
    assert [r for _, r in done.skipped_messages] == [SkipReason.SOURCE_IS_DLQ]
    assert engine.stats(P, "d").total == 1


def test_everything_can_go_to_one_destination_without_sources(mixed: Engine) -> None:
    engine = mixed
    engine.create_queue(P, "other")
    task = engine.start_redrive(P, "d", destination="other")
    _run(engine, task.id)
    done = engine.get_task(P, "d", task_id=task.id)
    assert (done.status, done.moved, done.skipped) == (TaskStatus.COMPLETED, 3, 0)
    assert engine.stats(P, "other").total == 3


@pytest.mark.parametrize("strand", ["delete_source", "remove_policy"])
def test_stranded_dead_letters_can_still_be_redriven(engine: Engine, strand: str) -> None:
    with_dlq(engine, "s", "d", max_claims=1)
    _kill(engine, "s", "s1")
    if strand == "delete_source":
        engine.delete_queue(P, "s")
    else:
        engine.change_settings(P, "s", change=lambda q: q.settings.with_changes(dead_letter=None))
    engine.create_queue(P, "other")
    assert engine.is_redrive_source(P, "d")
    # A DLQ target is still refused as a destination.
    with_dlq(engine, "t", "t-dlq")
    with pytest.raises(errors.DeadLetterChainRefused):
        engine.start_redrive(P, "d", destination="t-dlq")
    task = engine.start_redrive(P, "d", destination="other")
    _run(engine, task.id)
    assert engine.get_task(P, "d", task_id=task.id).moved == 1
    assert [m.body for m in engine.claim(P, "other", limit=10).messages] == [b"s1"]
    # Emptied, with no policy pointing at it, it is a plain queue again.
    with pytest.raises(errors.InvalidInput):
        engine.start_redrive(P, "d")
    with pytest.raises(errors.InvalidInput):
        engine.start_redrive(P, "other")


def test_a_deleted_destination_still_fails_the_task(mixed: Engine) -> None:
    engine = mixed
    engine.create_queue(P, "other")
    task = engine.start_redrive(P, "d", destination="other")
    engine.delete_queue(P, "other")
    _run(engine, task.id)
    failed = engine.get_task(P, "d", task_id=task.id)
    assert failed.status is TaskStatus.FAILED and failed.failure_reason
    assert engine.stats(P, "d").total == 3


def test_a_filtered_redrive_skips_within_its_filter(mixed: Engine) -> None:
    engine = mixed
    task = engine.start_redrive(P, "d", where=DeadLetterFilter(source_queue="s"))
    _run(engine, task.id)
    done = engine.get_task(P, "d", task_id=task.id)
    assert (done.moved, done.skipped) == (2, 0)
