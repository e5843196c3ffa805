"""A message read from its row is the same whichever way the row is read: by column name (every
reader) or by the places of its columns in the result (`Dialect.reader`, the hot path)."""

from __future__ import annotations

from deadletter.domain.model import Attribute, NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from deadletter.storage.rows import message_from
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.transaction import SQLTransaction
from tests.engine.helpers import P, with_dlq


def test_messages_and_their_places_read_by_position_equal_those_read_by_name(
    engine: Engine, store: Store
) -> None:
    with_dlq(engine, max_claims=1)
    attributes = {"kind": Attribute("String", "order"), "n": Attribute("Number", "7")}
    sent = engine.send(P, "orders", messages=[NewMessage(b'{"n": %d}' % i, attributes=attributes)
                                     for i in range(4)])  # fmt: skip
    claim = engine.claim(P, "orders", limit=2)
    engine.dead_letter(
        P,
        "orders",
        held=[(m.id, claim.id) for m in claim.messages],
        description="bad",
        error="E: no",
    )
    dead = [m.id for m in claim.messages]
    alive = [m.id for m in sent if m.id not in dead]
    engine.claim(P, "orders", limit=1)  # one claimed, one ready
    for queue, ids in (("orders", alive), ("orders-dlq", dead)):
        with store.transaction() as tx:
            assert isinstance(tx, SQLTransaction)
            params = {"project": P, "queue": queue, "ids": ids}
            by_name = [message_from(r) for r in tx.all(q.GET_MESSAGES_LOCKED, params)]
            tx._places.clear()
            for r in tx.all(q.GET_MESSAGES_LOCKED, params):
                tx._note_place(r)
            places_by_name = dict(tx._places)
            tx._places.clear()
            by_position = tx._messages(q.GET_MESSAGES_LOCKED, params)
            assert by_position == by_name and len(by_name) == len(ids)
            assert tx._places == places_by_name
            # read locked: where each message is was noted, as a write after it needs
            assert set(tx._places) == set(ids)
    # The rows read held what a message row can hold: provenance, history, attributes, claims
    (moved, _) = engine.get_messages(P, "orders-dlq", ids=dead)
    assert moved.provenance is not None and moved.history and moved.attributes
    assert any(m.claim_id for m in engine.get_messages(P, "orders", ids=alive))
