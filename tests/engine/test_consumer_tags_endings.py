"""What ends a message for every consumer group of a queue with tags, not only for the
untagged consumers: it expired, or a bounded queue pushed it out (drop-head). It is
dead-lettered once, no tag receives it afterwards, and no later sweep finds it again."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.model import Overflow, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.provenance import Reason
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send

DLQ = "orders-dlq"
TAGS = ("billing", "shipping")


def _expired(engine: Engine, clock: ManualClock) -> Reason:
    engine.create_queue(
        P,
        "orders",
        settings=QueueSettings(
            dead_letter=DeadLetterPolicy(target=DLQ, max_claims=5, on_expiry=True)
        ),
    )
    for tag in TAGS:
        engine.create_tag(P, "orders", name=tag)
    send(engine, "orders", "order-1", ttl=60)
    clock.advance(61)
    engine.sweep_expired()
    return Reason.EXPIRED


def _pushed_out(engine: Engine, clock: ManualClock) -> Reason:
    engine.create_queue(
        P,
        "orders",
        settings=QueueSettings(
            dead_letter=DeadLetterPolicy(target=DLQ, max_claims=5),
            max_messages=1,
            overflow=Overflow.DROP_HEAD,
        ),
    )
    for tag in TAGS:
        engine.create_tag(P, "orders", name=tag)
    send(engine, "orders", "order-1")
    send(engine, "orders", "order-2")  # pushes order-1 out
    return Reason.MAXLEN


ENDINGS: dict[str, Callable[[Engine, ManualClock], Reason]] = {
    "expired": _expired,
    "pushed-out": _pushed_out,
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_an_ending_for_every_group_dead_letters_the_message_once(
    engine: Engine, clock: ManualClock, ending: str
) -> None:
    # Given a queue with two tags, when order-1 ends (expires, or is pushed out)
    engine.create_queue(P, DLQ)
    reason = ENDINGS[ending](engine, clock)
    # Then it is dead-lettered once, for the queue as a whole (no tag named)
    (dead,) = engine.list_dead_letters(P, DLQ)
    assert dead.body == b"order-1"
    assert dead.provenance is not None
    assert (dead.provenance.reason, dead.provenance.source_tag) == (reason, None)
    # no group receives it
    for tag in (None, *TAGS):
        claimed = engine.claim(P, "orders", limit=10, tag=tag).messages
        assert b"order-1" not in [m.body for m in claimed], tag
    # and later sweeps do not dead-letter it again
    for _ in range(3):
        clock.advance(600)
        engine.sweep_expired()
    assert [m.body for m in engine.list_dead_letters(P, DLQ)] == [b"order-1"]
    assert engine.stats(P, "orders").dead_lettered == {reason.value: 1}
