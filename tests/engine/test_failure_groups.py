"""Failure groups as units: a saved filter or a pattern archived, restored, discarded with a
record, retried and followed; on every store."""

from __future__ import annotations

from dataclasses import replace

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.failure_groups import DEFAULT_RETENTION, Departure
from deadletter.domain.model import DeadLetterFilter, Message
from deadletter.domain.provenance import ErrorDetails
from deadletter.domain.redrive import TaskStatus
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
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


def _tag_counts(engine: Engine) -> tuple[int, int]:
    counts = engine.get_tag(P, DLQ, name="audit").counts
    return counts.ready, counts.claimed


def _tag_states(engine: Engine) -> int:
    """The DLQ's rows of delivery state for its tags, read from the store."""
    with engine.store.read() as tx:
        sql = "SELECT COUNT(*) AS n FROM tag_states WHERE project = :project AND queue = :queue"
        return int(tx.one(sql, {"project": P, "queue": DLQ})["n"])  # type: ignore[attr-defined]


def _timeouts(messages: list[Message]) -> list[bytes]:
    return sorted(m.body for m in messages if m.body.startswith(b"t"))


@pytest.mark.parametrize("claimed_first", [False, True])
def test_a_dlq_with_a_tag_delivers_a_restored_dead_letter_to_every_group(
    groups: Engine, clock: ManualClock, claimed_first: bool
) -> None:
    """Given a DLQ consumed by a tag and by its untagged consumers, when its timeouts are
    archived and restored, each group receives them as if they had just arrived."""
    engine = groups
    engine.create_tag(P, DLQ, name="audit", start_at=0.0)
    if claimed_first:
        # Both groups had them; their claims leave with the archive
        assert len(engine.claim(P, DLQ, limit=10, tag="audit", ttl=60).messages) == 5
        assert len(engine.claim(P, DLQ, limit=10, ttl=60).messages) == 5
        clock.advance(61)
    assert engine.archive(P, DLQ, where=TIMEOUTS) == 3
    # No ghost: the tag holds, counts and claims none of the archived
    assert _tag_counts(engine) == (2, 0)
    assert _tag_states(engine) == (2 if claimed_first else 0)
    assert _timeouts(engine.claim(P, DLQ, limit=10, tag="audit", ttl=60).messages) == []
    assert engine.restore(P, DLQ, where=TIMEOUTS) == 3
    assert _tag_counts(engine)[0] >= 3
    tagged = engine.claim(P, DLQ, limit=10, tag="audit", ttl=60).messages
    assert _timeouts(tagged) == [b"t1", b"t2", b"t3"]
    default = engine.claim(P, DLQ, limit=10, ttl=60).messages
    assert _timeouts(default) == [b"t1", b"t2", b"t3"]
    # each delivered as if it had just arrived: its first claim in the DLQ for either group
    # (the untagged consumers count on from the claims it came with, a tag from none)
    arrived = {m.id: m.provenance.claim_count for m in default if m.provenance}
    assert {m.claim_count - arrived[m.id] for m in default if m.body.startswith(b"t")} == {1}
    assert {m.claim_count for m in tagged if m.body.startswith(b"t")} == {1}


class Heard(EngineListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []
        self.available: list[str] = []

    def messages_available(self, project: str, queue: str) -> None:
        self.available.append(queue)

    def archived(self, project: str, dlq: str, count: int) -> None:
        self.events.append(("archived", dlq, count))

    def restored(self, project: str, dlq: str, count: int) -> None:
        self.events.append(("restored", dlq, count))

    def discarded(self, project: str, dlq: str, count: int) -> None:
        self.events.append(("discarded", dlq, count))


def test_archive_restore_and_discard_are_told_to_the_listeners(groups: Engine) -> None:
    engine = groups
    heard = Heard()
    engine.add_listener(heard)
    # Previews and empty selections tell nothing
    engine.archive(P, DLQ, where=TIMEOUTS, dry_run=True)
    engine.discard(P, DLQ, where=DeadLetterFilter(error_class="Nope"), reason="none")
    assert heard.events == []
    engine.archive(P, DLQ, where=TIMEOUTS)
    engine.restore(P, DLQ)
    engine.discard(P, DLQ, where=DeadLetterFilter(error_class="KeyError"), reason="stale")
    assert heard.events == [("archived", DLQ, 3), ("restored", DLQ, 3), ("discarded", DLQ, 2)]
    # A restore wakes the DLQ's consumers waiting for messages
    assert DLQ in heard.available


# Selections that take in a message sent straight into the DLQ: it has no provenance, so it is
# no dead letter to archive (a restore could not bring it back), and the preview must say so.
STRAIGHT_IN = [
    pytest.param(lambda direct: DeadLetterFilter(min_deaths=0), id="min_deaths=0"),
    pytest.param(lambda direct: DeadLetterFilter(message_ids=(direct,)), id="message_ids"),
    pytest.param(lambda direct: DeadLetterFilter(body="@ != 'x'"), id="body"),
    pytest.param(lambda direct: DeadLetterFilter(max_deaths=5), id="max_deaths"),
]


@pytest.mark.parametrize("selection", STRAIGHT_IN)
def test_an_archives_preview_counts_what_the_archive_takes(groups: Engine, selection) -> None:  # type: ignore[no-untyped-def]
    # Given a DLQ of five dead letters and one message sent straight into it
    [direct] = send(groups, DLQ, "straight in")
    where = selection(direct.id)
    # When an archive is previewed, then done
    preview = groups.archive(P, DLQ, where=where, dry_run=True)
    archived = groups.archive(P, DLQ, where=where)
    # Then the preview said what the archive took, and the message sent straight in stays
    assert preview == archived
    assert direct.id in {m.id for m in groups.list_dead_letters(P, DLQ)}
