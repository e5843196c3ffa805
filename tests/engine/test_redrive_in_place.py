"""A redrive rewrites each dead letter in place, in one statement per batch: what comes back
must be what `transitions.redriven` describes, field by field, on every store."""

from __future__ import annotations

import uuid

from deadletter.clock import ManualClock
from deadletter.domain.model import SOURCE_QUEUE_ATTRIBUTE, Attribute, ListQuery, NewMessage
from deadletter.domain.redrive import TaskStatus
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, fail, with_dlq


def test_redriven_messages_are_new_messages_of_their_source_with_their_body_and_history(
    engine: Engine, clock: ManualClock
) -> None:
    with_dlq(engine, "a", "dlq", max_claims=1)
    attributes = {"kind": Attribute("String", "x"), "n": Attribute("Number", "7")}
    sent = engine.send(P, "a", messages=[NewMessage(body=f"m{i}".encode(), attributes=attributes)
                                for i in range(5)])  # fmt: skip
    fail(engine, "a", 1)
    engine.claim(P, "a", limit=100)
    dead = engine.list_dead_letters(P, "dlq")
    assert all(SOURCE_QUEUE_ATTRIBUTE in m.attributes for m in dead)
    clock.advance(10)
    task = engine.start_redrive(P, "dlq")
    while engine.redrive_step(task.id, 2).status is TaskStatus.RUNNING:
        pass
    back = engine.list_messages(P, "a", query=ListQuery(limit=10))
    assert [m.body for m in back] == [b"m0", b"m1", b"m2", b"m3", b"m4"]  # in their DLQ order
    assert sorted(m.seq for m in back) == [m.seq for m in back]
    assert min(m.seq for m in back) > max(m.seq for m in dead)
    now = clock.now()
    ttl = engine.get_queue(P, "a").settings.default_ttl
    for m in back:
        assert m.id not in {d.id for d in dead} | {s.id for s in sent}
        assert uuid.UUID(m.id).version == 4 and str(uuid.UUID(m.id)) == m.id
        assert m.attributes == attributes  # the reserved DLQ.* attributes dropped
        assert (m.queue, m.enqueued_at, m.visible_at, m.expires_at) == ("a", now, now, now + ttl)
        assert (m.claim_id, m.claim_count, m.first_claimed_at, m.provenance) == (
            None,
            0,
            None,
            None,
        )
        assert m.dead_letter_due_at is None
        *before, event = m.history
        assert [e["event"] for e in before] == ["dead_lettered"]
        assert event == {"event": "redriven", "at": now, "dlq": "dlq", "queue": "a",
                         "task_id": task.id}  # fmt: skip
    assert len({m.id for m in back}) == 5
    assert engine.stats(P, "a").total == 5 and engine.stats(P, "dlq").total == 0


def test_a_message_sent_straight_to_a_dlq_comes_back_with_its_attributes_and_one_event(
    engine: Engine, clock: ManualClock
) -> None:
    with_dlq(engine, "a", "dlq")
    # Given messages sent to the DLQ itself, with no history, one with "DLQ." in a value
    attributes = [{}, {"note": Attribute("String", 'moved by "DLQ.sourceQueue" rules')}]
    engine.send(P, "dlq", messages=[NewMessage(body=b"x", attributes=a) for a in attributes])
    clock.advance(10)
    # When they are redriven to a queue
    task = engine.start_redrive(P, "dlq", destination="a")
    while engine.redrive_step(task.id, 10).status is TaskStatus.RUNNING:
        pass
    # I expect their attributes as they were, and the redrive as their one event
    back = engine.list_messages(P, "a", query=ListQuery(limit=10))
    assert [m.attributes for m in back] == attributes
    event = {"event": "redriven", "at": clock.now(), "dlq": "dlq", "queue": "a",
             "task_id": task.id}  # fmt: skip
    assert [m.history for m in back] == [(event,), (event,)]
