"""A last allowed claim that lapses unacknowledged on a queue without consumer tags: the
sweep moves the message to the DLQ as spent (`max_claims`), never as expired, whether or
not the policy also dead-letters expired messages, and counts it so."""

from __future__ import annotations

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.provenance import Reason
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send, with_dlq


@pytest.mark.parametrize("on_expiry", [False, True], ids=["dropping", "on-expiry"])
@pytest.mark.parametrize("max_claims", [1, 3])
def test_a_lapsed_last_claim_is_swept_as_max_claims_on_the_default_group(
    engine: Engine, clock: ManualClock, max_claims: int, on_expiry: bool
) -> None:
    # Given a queue without tags whose policy allows `max_claims` claims
    with_dlq(engine, max_claims=max_claims, on_expiry=on_expiry)
    (sent,) = send(engine, "orders", "order-1", ttl=3600)
    # and a message claimed that many times, each claim left to lapse
    for _ in range(max_claims):
        claim = engine.claim(P, "orders", limit=10, ttl=30)
        assert [m.id for m in claim.messages] == [sent.id]
        clock.advance(31)
    # When the sweep runs, long before the message would expire
    engine.sweep_expired()
    # Then it is a dead letter of the default group, spent, not expired
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.provenance is not None
    assert (dead.provenance.original_message_id, dead.provenance.source_tag) == (sent.id, None)
    assert dead.provenance.reason is Reason.MAX_CLAIMS
    assert dead.provenance.claim_count == max_claims
    assert dead.history[-1]["reason"] == "max_claims"
    stats = engine.stats(P, "orders")
    assert (stats.total, stats.dead_lettered, stats.expired_dropped) == (
        0,
        {"max_claims": 1},
        0,
    )
