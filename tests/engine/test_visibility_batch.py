"""Visibility changes in a batch (SQS's ChangeMessageVisibilityBatch): one transaction, each
change applied as it would be alone, a refused one writing nothing."""

from __future__ import annotations

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import MAX_CLAIM_TTL, Message
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from tests.engine.helpers import P, send, with_dlq


def test_each_change_succeeds_or_fails_alone_in_one_transaction(
    engine: Engine, store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.create_queue(P, "orders")
    a, b, c = send(engine, "orders", "a", "b", "c")
    claim = engine.claim(P, "orders", limit=3, ttl=30)
    opened: list[str] = []
    original = store.transaction
    monkeypatch.setattr(store, "transaction", lambda: opened.append("write") or original())
    # When one batch extends a, gives b back, names c with a claim that is not its own and
    # with a timeout out of range, and names a message that does not exist
    results = engine.change_visibilities(
        P,
        "orders",
        changes=[
            (a.id, claim.id, 300, None),
            (b.id, claim.id, 0, None),
            (c.id, "not-its-claim", 0, None),
            (c.id, claim.id, MAX_CLAIM_TTL + 1, None),
            ("no-such-message", claim.id, 10, None),
        ],
    )
    # I expect one transaction, and an answer per change
    assert opened == ["write"]
    changed_a, back_b, *refused = results
    assert isinstance(changed_a, Message) and changed_a.claim_expires_at == clock.now() + 300
    assert isinstance(back_b, Message) and back_b.claim_id is None
    assert [type(r) for r in refused] == [
        errors.ClaimMismatch,
        errors.OutOfRange,
        errors.MessageNotFound,
    ]
    # and the refused ones to have written nothing: c is still held, until its claim lapses
    assert [m.id for m in engine.claim(P, "orders", limit=3, ttl=300).messages] == [b.id]
    clock.advance(30)
    assert [m.id for m in engine.claim(P, "orders", limit=3).messages] == [c.id]


def test_changes_of_one_message_apply_in_order(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "orders")
    (a,) = send(engine, "orders", "a")
    claim = engine.claim(P, "orders", limit=1, ttl=30)
    # Extended twice, then given back: the last change finds the claim still holding it
    results = engine.change_visibilities(
        P, "orders", changes=[(a.id, claim.id, 100, None), (a.id, claim.id, 200, None)]
    )
    assert [r.claim_expires_at for r in results if isinstance(r, Message)] == [
        clock.now() + 100,
        clock.now() + 200,
    ]
    assert engine.get_message(P, "orders", message_id=a.id).claim_expires_at == clock.now() + 200
    # Given back, then extended: the second change finds it no longer held
    back, again = engine.change_visibilities(
        P, "orders", changes=[(a.id, claim.id, 0, None), (a.id, claim.id, 100, None)]
    )
    assert isinstance(back, Message) and back.claim_id is None
    assert isinstance(again, errors.ClaimMismatch)
    assert [m.id for m in engine.claim(P, "orders", limit=1).messages] == [a.id]


def test_a_message_given_back_at_its_limit_is_dead_lettered_and_then_gone(
    engine: Engine,
) -> None:
    with_dlq(engine, "orders", "orders-dlq", max_claims=1)
    a, b = send(engine, "orders", "a", "b")
    claim = engine.claim(P, "orders", limit=2, ttl=30)
    moved, changed, gone = engine.change_visibilities(
        P,
        "orders",
        changes=[(a.id, claim.id, 0, None), (b.id, claim.id, 60, None), (a.id, claim.id, 60, None)],
    )
    assert isinstance(moved, Message) and moved.queue == "orders-dlq"
    assert isinstance(changed, Message) and changed.claim_id == claim.id
    assert isinstance(gone, errors.MessageNotFound)
    assert engine.stats(P, "orders-dlq").total == 1


def test_a_batch_mixes_a_tags_changes_with_the_untagged_consumers(
    engine: Engine, clock: ManualClock
) -> None:
    engine.create_queue(P, "orders")
    engine.create_tag(P, "orders", name="billing")
    (a,) = send(engine, "orders", "a")
    untagged = engine.claim(P, "orders", limit=1, ttl=30)
    tagged = engine.claim(P, "orders", limit=1, ttl=30, tag="billing")
    results = engine.change_visibilities(
        P,
        "orders",
        changes=[
            (a.id, untagged.id, 300, None),
            (a.id, tagged.id, 0, "billing"),
            (a.id, untagged.id, 0, "billing"),  # the untagged claim is not the tag's
        ],
    )
    assert [type(r) for r in results] == [Message, Message, errors.ClaimMismatch]
    # The tag has it back at once; the untagged consumers' claim goes on for 300 seconds
    assert [m.id for m in engine.claim(P, "orders", limit=1, tag="billing").messages] == [a.id]
    clock.advance(299)
    assert engine.claim(P, "orders", limit=1).messages == ()
    clock.advance(1)
    assert [m.id for m in engine.claim(P, "orders", limit=1).messages] == [a.id]


def test_a_missing_queue_refuses_the_whole_batch(engine: Engine) -> None:
    with pytest.raises(errors.QueueNotFound):
        engine.change_visibilities(P, "nowhere", changes=[("m", "c", 10, None)])
