"""Dead letters that say everything: the error as fields (Kafka Connect's error context), the
deaths per queue and reason (RabbitMQ's x-death), and a nack that is not requeued (RabbitMQ's
requeue=false)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import MAX_ERROR_CLASS, MAX_ERROR_DETAILS, DeadLetterFilter
from deadletter.domain.provenance import ErrorDetails, Reason, death_counts
from deadletter.domain.redrive import TaskStatus
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send, with_dlq


def redrive_all(engine: Engine, dlq: str) -> None:
    task = engine.start_redrive(P, dlq, where=DeadLetterFilter())
    while engine.redrive_step(task.id, 100).status is TaskStatus.RUNNING:
        pass


def test_error_fields_are_kept_and_the_text_form_reads_the_message(engine: Engine) -> None:
    # Given a consumer that rejects a message with the exception's class, message and stack,
    with_dlq(engine)
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1)
    error = ErrorDetails(message="'id'", error_class="KeyError", stack="Traceback ...\n  x")
    engine.dead_letter(
        P, "orders", held=[(m.id, claim.id)], description="customer.id missing", error=error
    )
    # the dead letter keeps each field, and its one-text error is the message.
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    p = dead.provenance
    assert p is not None
    assert (p.error, p.error_class, p.error_stack) == ("'id'", "KeyError", "Traceback ...\n  x")
    assert p.to_dict()["error_class"] == "KeyError"


def test_a_class_alone_is_also_the_text_and_a_text_alone_adds_no_fields(engine: Engine) -> None:
    with_dlq(engine)
    a, b = send(engine, "orders", "a", "b")
    claim = engine.claim(P, "orders", limit=2)
    engine.dead_letter(P, "orders", held=[(a.id, claim.id)], error=ErrorDetails(error_class="E"))
    engine.dead_letter(P, "orders", held=[(b.id, claim.id)], error="plain text")
    by_id = {d.id: d.provenance for d in engine.list_dead_letters(P, "orders-dlq")}
    assert by_id[a.id] is not None and (by_id[a.id].error, by_id[a.id].error_class) == ("E", "E")
    plain = by_id[b.id]
    assert plain is not None and plain.error == "plain text"
    # Read as it always was: no new keys on a text error.
    assert "error_class" not in plain.to_dict() and "error_stack" not in plain.to_dict()


@pytest.mark.parametrize(
    "error",
    [
        ErrorDetails(error_class="C" * (MAX_ERROR_CLASS + 1)),
        ErrorDetails(message="m" * (MAX_ERROR_DETAILS + 1)),
        ErrorDetails(error_class="E", stack="s" * (MAX_ERROR_DETAILS + 1)),
    ],
    ids=["class", "message", "stack"],
)
def test_each_error_field_is_bounded_and_nothing_moves(engine: Engine, error: ErrorDetails) -> None:
    with_dlq(engine)
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1)
    with pytest.raises(errors.InvalidInput):
        engine.dead_letter(P, "orders", held=[(m.id, claim.id)], description="bad", error=error)
    assert engine.list_dead_letters(P, "orders-dlq") == []


def test_deaths_are_counted_per_queue_and_reason_with_first_and_last_time(
    engine: Engine, clock: ManualClock
) -> None:
    # Given a message that dies once by its delivery limit and twice rejected, redriven between,
    with_dlq(engine, max_claims=1)
    send(engine, "orders", "m")
    first = clock.now()
    claim = engine.claim(P, "orders", limit=1)
    engine.release_claim(P, "orders", claim_id=claim.id)  # its last delivery: to the DLQ
    rejected_at = []
    for _ in range(2):
        clock.advance(10)
        redrive_all(engine, "orders-dlq")
        claim = engine.claim(P, "orders", limit=1)
        rejected_at.append(clock.now())
        engine.dead_letter(P, "orders", held=[(claim.messages[0].id, claim.id)], description="bad")
    # its deaths read like x-death: the most recent first, each with its count and times.
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert death_counts(dead.history) == [
        {"queue": "orders", "reason": "rejected", "count": 2,
         "first_at": rejected_at[0], "last_at": rejected_at[1]},
        {"queue": "orders", "reason": "max_claims", "count": 1,
         "first_at": first, "last_at": first},
    ]  # fmt: skip


_events = st.lists(
    st.one_of(
        st.builds(
            lambda q, r, at: {"event": "dead_lettered", "queue": q, "reason": r, "at": at},
            st.sampled_from(["a", "b"]),
            st.sampled_from([r.value for r in Reason]),
            st.floats(0, 1e9),
        ),
        st.builds(
            lambda at: {"event": "redriven", "queue": "a", "dlq": "d", "at": at}, st.floats(0, 1e9)
        ),
    ),
    max_size=30,
)


@given(_events)
def test_death_counts_account_for_every_death_once(history: list[dict[str, Any]]) -> None:
    history.sort(key=lambda e: e["at"])  # a history is in time order
    deaths = death_counts(history)
    died = [e for e in history if e["event"] == "dead_lettered"]
    assert sum(d["count"] for d in deaths) == len(died)
    assert len({(d["queue"], d["reason"]) for d in deaths}) == len(deaths)
    for d in deaths:
        mine = [e["at"] for e in died if (e["queue"], e["reason"]) == (d["queue"], d["reason"])]
        assert (d["count"], d["first_at"], d["last_at"]) == (len(mine), mine[0], mine[-1])
    assert [d["last_at"] for d in deaths] == sorted((d["last_at"] for d in deaths), reverse=True)


@pytest.mark.parametrize("tag", [None, "billing"])
def test_a_nack_not_requeued_is_dead_lettered_at_once_as_rejected(
    engine: Engine, tag: str | None
) -> None:
    # Given a queue with a DLQ that allows 5 deliveries, and a message claimed once,
    with_dlq(engine, max_claims=5)
    if tag:
        engine.create_tag(P, "orders", name=tag)
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1, tag=tag)
    # when its consumer nacks it without requeue,
    moved = engine.release_message(
        P, "orders", message_id=m.id, claim_id=claim.id, tag=tag, requeue=False
    )
    # it is in the DLQ at once, rejected, and never delivered to that consumer again.
    assert moved is not None and moved.queue == "orders-dlq"
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.provenance is not None
    assert (dead.provenance.reason, dead.provenance.source_tag) == (Reason.REJECTED, tag)
    assert engine.claim(P, "orders", limit=1, tag=tag).messages == ()
    if tag is None:
        assert engine.stats(P, "orders").dead_lettered == {"rejected": 1}
    else:  # a tag's dead letter is a copy: the queue's own consumers still receive it
        assert [x.id for x in engine.claim(P, "orders", limit=1).messages] == [m.id]


def test_a_nack_not_requeued_without_a_dlq_drops_and_counts(engine: Engine) -> None:
    engine.create_queue(P, "plain")
    (m,) = send(engine, "plain", "m")
    claim = engine.claim(P, "plain", limit=1)
    assert (
        engine.release_message(P, "plain", message_id=m.id, claim_id=claim.id, requeue=False)
        is None
    )
    stats = engine.stats(P, "plain")
    assert (stats.total, stats.dropped, stats.dead_lettered) == (0, {"rejected": 1}, {})


def test_a_nack_not_requeued_drops_what_is_not_eligible_for_the_dlq(engine: Engine) -> None:
    with_dlq(engine)
    (m,) = send(engine, "orders", "m", dead_letter_eligible=False)
    claim = engine.claim(P, "orders", limit=1)
    assert (
        engine.release_message(P, "orders", message_id=m.id, claim_id=claim.id, requeue=False)
        is None
    )
    assert engine.list_dead_letters(P, "orders-dlq") == []
    assert engine.stats(P, "orders").dropped == {"rejected": 1}


def test_a_nack_not_requeued_takes_no_delay_and_needs_the_claim(engine: Engine) -> None:
    with_dlq(engine)
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1)
    with pytest.raises(errors.InvalidInput):
        engine.release_message(
            P, "orders", message_id=m.id, claim_id=claim.id, delay=5, requeue=False
        )
    with pytest.raises(errors.DeadletterError):
        engine.release_message(
            P, "orders", message_id=m.id, claim_id="not-the-claim", requeue=False
        )
    assert engine.list_dead_letters(P, "orders-dlq") == []
    assert engine.stats(P, "orders").total == 1
