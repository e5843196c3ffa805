"""Failure groups as units: a saved filter or a pattern archived, restored, discarded with a
record, retried and followed; on every store."""

from __future__ import annotations

from dataclasses import replace

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.failure_groups import DEFAULT_RETENTION, Departure
from deadletter.domain.model import DeadLetterFilter
from deadletter.domain.provenance import ErrorDetails
from deadletter.domain.redrive import TaskStatus
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send, with_dlq

DLQ = "orders-dlq"
TIMEOUTS = DeadLetterFilter(saved="timeouts")


def _die(engine: Engine, error_class: str, *bodies: str) -> None:
    """Send one message per body to orders and dead-letter each with this error class."""
    send(engine, "orders", *bodies)
    claim = engine.claim(P, "orders", limit=len(bodies))
    error = ErrorDetails(message="x", error_class=error_class)
    held = [(m.id, claim.id) for m in claim.messages]
    engine.dead_letter(P, "orders", held=held, description="failed", error=error)


@pytest.fixture
def groups(engine: Engine) -> Engine:
    """Given a DLQ of three timeouts and two key errors, and a filter saved for the timeouts."""
    with_dlq(engine, max_claims=5)
    _die(engine, "TimeoutError", "t1", "t2", "t3")
    _die(engine, "KeyError", "k1", "k2")
    engine.save_filter(P, DLQ, name="timeouts", where=DeadLetterFilter(error_class="TimeoutError"))
    return engine


def _bodies(engine: Engine, where: DeadLetterFilter | None = None) -> list[bytes]:
    return sorted(m.body for m in engine.list_dead_letters(P, DLQ, where=where))


def test_a_saved_filter_selects_wherever_a_filter_does(groups: Engine) -> None:
    engine = groups
    assert _bodies(engine, TIMEOUTS) == [b"t1", b"t2", b"t3"]
    assert engine.count_dead_letters(P, DLQ, where=TIMEOUTS) == 3
    # Names given beside it narrow it; the same name in both is refused
    narrower = DeadLetterFilter(saved="timeouts", message_ids=None, max_deaths=0)
    assert engine.count_dead_letters(P, DLQ, where=narrower) == 0
    with pytest.raises(errors.InvalidFilter, match="set by the saved filter"):
        engine.count_dead_letters(
            P, DLQ, where=DeadLetterFilter(saved="timeouts", error_class="KeyError")
        )
    with pytest.raises(errors.FilterNotFound):
        engine.count_dead_letters(P, DLQ, where=DeadLetterFilter(saved="nope"))
    assert [f.name for f in engine.list_filters(P, DLQ)] == ["timeouts"]
    engine.delete_filter(P, DLQ, name="timeouts")
    with pytest.raises(errors.FilterNotFound):
        engine.get_filter(P, DLQ, name="timeouts")


def test_a_saved_filter_is_refused_empty_or_naming_another(groups: Engine) -> None:
    with pytest.raises(errors.InvalidFilter):
        groups.save_filter(P, DLQ, name="all", where=DeadLetterFilter())
    with pytest.raises(errors.InvalidFilter):
        groups.save_filter(P, DLQ, name="again", where=TIMEOUTS)
    with pytest.raises(errors.InvalidInput):
        groups.save_filter(P, DLQ, name="no spaces", where=DeadLetterFilter(reason=None, body="a"))
    with pytest.raises(errors.PatternNotFound):
        groups.save_filter(P, DLQ, name="p", where=DeadLetterFilter(pattern_id="p-none"))


def test_an_archived_group_leaves_the_active_view_and_comes_back(
    groups: Engine, clock: ManualClock
) -> None:
    engine = groups
    # A preview counts and moves nothing
    assert engine.archive(P, DLQ, where=TIMEOUTS, dry_run=True) == 3
    assert engine.stats(P, DLQ).total == 5
    # When the group is archived
    assert engine.archive(P, DLQ, where=TIMEOUTS, retention=3600, by={"who": "ops"}) == 3
    # Then browse, count, stats and claims no longer see it
    assert _bodies(engine) == [b"k1", b"k2"]
    assert engine.count_dead_letters(P, DLQ) == 2
    assert engine.stats(P, DLQ).total == 2
    assert engine.stats(P, DLQ).by_source == {"orders": 2}
    assert sorted(m.body for m in engine.claim(P, DLQ, limit=10).messages) == [b"k1", b"k2"]
    # and the archive holds it, each with when it goes
    kept = engine.list_archived(P, DLQ)
    assert sorted(a.message.body for a in kept) == [b"t1", b"t2", b"t3"]
    assert {a.keep_until - a.archived_at for a in kept} == {3600}
    assert engine.count_archived(P, DLQ, where=TIMEOUTS) == 3
    assert kept[0].message.history[-1]["event"] == "archived"
    # When part of it is restored
    assert engine.restore(P, DLQ, where=DeadLetterFilter(error_class="KeyError")) == 0
    one = DeadLetterFilter(message_ids=(kept[0].message.id,))
    assert engine.restore(P, DLQ, where=one, dry_run=True) == 1
    assert engine.restore(P, DLQ, where=one) == 1
    # Then it is a dead letter again, with its provenance, and counted
    back = [m for m in engine.list_dead_letters(P, DLQ) if m.id == kept[0].message.id]
    assert back and back[0].provenance is not None
    assert [e["event"] for e in back[0].history][-2:] == ["archived", "restored"]
    assert engine.stats(P, DLQ).total == 3
    assert engine.count_archived(P, DLQ) == 2


def test_archived_dead_letters_outlive_the_dlqs_ttl_then_leave_with_a_record(
    groups: Engine, clock: ManualClock
) -> None:
    engine = groups
    archived_at = clock.now()
    engine.archive(P, DLQ, where=TIMEOUTS)
    # Past the DLQ's retention the active dead letters expire; the archived stay
    clock.advance(engine.get_queue(P, DLQ).settings.max_ttl + 10)
    engine.sweep_expired()
    assert engine.stats(P, DLQ).total == 0
    assert engine.sweep_archives() == 0
    assert engine.count_archived(P, DLQ) == 3
    # A restored one whose expiry passed gets the DLQ's retention again from now
    first = engine.list_archived(P, DLQ, limit=1)[0].message.id
    engine.restore(P, DLQ, where=DeadLetterFilter(message_ids=(first,)))
    engine.sweep_expired()
    assert engine.stats(P, DLQ).total == 1
    # When the archive's retention ends (not a second before), the sweep deletes them and
    # says so in the log
    clock.advance(archived_at + DEFAULT_RETENTION - 1 - clock.now())
    assert engine.sweep_archives() == 0
    clock.advance(1)
    assert engine.sweep_archives() == 2
    assert engine.count_archived(P, DLQ) == 0
    (record,) = engine.list_discards(P, DLQ)
    assert (record.kind, record.count, len(record.sample_ids)) == (Departure.ARCHIVE_EXPIRED, 2, 2)


def test_a_discard_deletes_the_group_and_keeps_what_and_why(groups: Engine) -> None:
    engine = groups
    with pytest.raises(errors.InvalidInput, match="reason"):
        engine.discard(P, DLQ, where=TIMEOUTS, reason="  ")
    with pytest.raises(errors.InvalidFilter):
        engine.discard(P, DLQ, where=DeadLetterFilter(), reason="all")
    preview = engine.discard(P, DLQ, where=TIMEOUTS, reason="known outage", dry_run=True)
    assert preview.count == 3
    assert engine.list_discards(P, DLQ) == []
    done = engine.discard(P, DLQ, where=TIMEOUTS, reason="known outage", by={"who": "ops"})
    assert _bodies(engine) == [b"k1", b"k2"]
    (record,) = engine.list_discards(P, DLQ)
    assert record == done
    assert (record.kind, record.count, record.reason) == (Departure.DISCARDED, 3, "known outage")
    assert record.selection["filter"] == "timeouts" and record.by == {"who": "ops"}
    assert len(record.sample_ids) == 3
    # Nothing selected: nothing recorded
    assert engine.discard(P, DLQ, where=TIMEOUTS, reason="again").count == 0
    assert len(engine.list_discards(P, DLQ)) == 1


def _retry_and_fail(engine: Engine, where: DeadLetterFilter, fail: int) -> str:
    """Redrive `where` to the end, then dead-letter `fail` of what went back; the task id."""
    task = engine.start_redrive(P, DLQ, where=where)
    while engine.redrive_step(task.id, 100).status is TaskStatus.RUNNING:
        pass
    claim = engine.claim(P, "orders", limit=fail)
    engine.dead_letter(P, "orders", held=[(m.id, claim.id) for m in claim.messages])
    return task.id


def test_a_group_retried_by_its_saved_filter_is_followed(groups: Engine) -> None:
    engine = groups
    # Given the key errors retried before, and both dead again
    keys = _retry_and_fail(engine, DeadLetterFilter(error_class="KeyError"), 2)
    task = engine.start_redrive(P, DLQ, where=TIMEOUTS)
    assert task.to_move == 3 and task.filter.saved == "timeouts"
    while engine.redrive_step(task.id, 100).status is TaskStatus.RUNNING:
        pass
    # When two of the three fail again
    claim = engine.claim(P, "orders", limit=2)
    engine.dead_letter(P, "orders", held=[(m.id, claim.id) for m in claim.messages])
    # Then the task's group says so
    follow = engine.follow_redrive(P, DLQ, task_id=task.id)
    assert (follow.redriven, follow.came_back_dead, follow.still_out) == (3, 2, 1)
    assert engine.follow_redrive(P, DLQ, task_id=keys).came_back_dead == 2
    again = DeadLetterFilter(redriven_by=task.id)
    assert engine.count_dead_letters(P, DLQ, where=again) == 2


@pytest.mark.one_store
def test_deleting_the_dlq_forgets_its_groups(groups: Engine) -> None:
    engine = groups
    engine.archive(P, DLQ, where=TIMEOUTS)
    engine.discard(P, DLQ, where=DeadLetterFilter(error_class="KeyError"), reason="bad data")
    engine.delete_queue(P, DLQ, force=True)
    engine.create_queue(P, DLQ)
    assert engine.list_filters(P, DLQ) == []
    assert engine.count_archived(P, DLQ) == 0
    assert engine.list_discards(P, DLQ) == []


@pytest.mark.one_store
def test_a_bounded_dlq_takes_back_what_fits(groups: Engine) -> None:
    engine = groups
    engine.archive(P, DLQ, where=TIMEOUTS)
    # Given the DLQ bounded to three messages, two of them there
    settings = engine.get_queue(P, DLQ).settings
    engine.update_queue(P, DLQ, settings=replace(settings, max_messages=3))
    # When the three archived are restored, one fits; two stay archived
    assert engine.restore(P, DLQ) == 1
    assert engine.stats(P, DLQ).total == 3
    assert engine.count_archived(P, DLQ) == 2
