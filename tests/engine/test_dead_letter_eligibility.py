"""Dead-letter eligibility, per message (Solace's DMQ-eligible flag): a message not eligible
that goes past a limit (max claims or, where the policy asks, its TTL) is dropped and counted
by reason, on every path that would have moved it."""

from __future__ import annotations

from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from tests.engine.helpers import P, send, with_dlq


class Drops(EngineListener):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []

    def dropped(self, project: str, queue: str, reason: str, count: int) -> None:
        self.seen.append((queue, reason, count))


def test_not_eligible_is_dropped_at_max_claims_on_nack_claim_and_sweep(
    engine: Engine, clock: ManualClock
) -> None:
    drops = Drops()
    engine.add_listener(drops)
    with_dlq(engine, max_claims=1)
    a, b, c = send(engine, "orders", "a", "b", "c", dead_letter_eligible=False)
    ok = send(engine, "orders", "ok")[0]
    claim = engine.claim(P, "orders", limit=4, ttl=30)
    engine.release_message(P, "orders", message_id=a.id, claim_id=claim.id)  # a nack at the limit
    engine.change_visibility(P, "orders", message_id=b.id, claim_id=claim.id, timeout=0)
    clock.advance(31)
    engine.sweep_expired()  # c's and ok's last claims lapsed
    stats = engine.stats(P, "orders")
    assert (stats.total, stats.dropped, stats.dead_lettered) == (
        0,
        {"max_claims": 3},
        {"max_claims": 1},
    )
    assert [m.id for m in engine.list_dead_letters(P, "orders-dlq")] == [ok.id]
    assert sum(n for _, reason, n in drops.seen if reason == "max_claims") == 3
    assert c.id not in {m.id for m in engine.list_dead_letters(P, "orders-dlq")}


def test_not_eligible_is_dropped_and_counted_on_expiry(engine: Engine, clock: ManualClock) -> None:
    with_dlq(engine, max_claims=3, on_expiry=True)
    send(engine, "orders", "x", ttl=60, dead_letter_eligible=False)
    send(engine, "orders", "y", ttl=60)
    clock.advance(61)
    engine.sweep_expired()
    stats = engine.stats(P, "orders")
    assert (stats.dropped, stats.expired_dropped, stats.dead_lettered) == (
        {"expired": 1},
        1,
        {"expired": 1},
    )


def test_the_queue_default_applies_when_the_message_says_nothing(engine: Engine) -> None:
    with_dlq(engine, max_claims=1)
    engine.change_settings(
        P, "orders", change=lambda q: q.settings.with_changes(dead_letter_eligible=False)
    )
    (m,) = send(engine, "orders", "m")
    (yes,) = send(engine, "orders", "yes", dead_letter_eligible=True)
    assert not m.dead_letter_eligible and yes.dead_letter_eligible
    claim = engine.claim(P, "orders", limit=2)
    engine.release_claim(P, "orders", claim_id=claim.id)
    assert engine.stats(P, "orders").dropped == {"max_claims": 1}
    assert [d.body for d in engine.list_dead_letters(P, "orders-dlq")] == [b"yes"]
