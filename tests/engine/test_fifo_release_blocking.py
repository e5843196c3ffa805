"""A FIFO message given back hidden (a delay of its own, or its queue's retry backoff) holds
its group: no later message of the group is handed out before it, however it was given
back, until it is visible again and comes first."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.model import Claim, NewMessage, QueueSettings
from deadletter.domain.policies import RetryPolicy
from deadletter.engine.engine import Engine
from tests.engine.helpers import P

HIDDEN = 20  # seconds the first message stays hidden, whichever way it was given back
FIFO = QueueSettings(fifo=True, claim_ttl=30)
RETRYING = FIFO.with_changes(retry_policy=RetryPolicy(HIDDEN, 10 * HIDDEN))


def _delay(engine: Engine, claim: Claim) -> None:
    m = claim.messages[0]
    engine.release_message(P, "q.fifo", message_id=m.id, claim_id=claim.id, delay=HIDDEN)


def _release_under_retry(engine: Engine, claim: Claim) -> None:
    m = claim.messages[0]
    engine.release_message(P, "q.fifo", message_id=m.id, claim_id=claim.id)


def _release_claim_under_retry(engine: Engine, claim: Claim) -> None:
    engine.release_claim(P, "q.fifo", claim_id=claim.id)


def _visibility_zero_under_retry(engine: Engine, claim: Claim) -> None:
    m = claim.messages[0]
    engine.change_visibility(P, "q.fifo", message_id=m.id, claim_id=claim.id, timeout=0)


GIVE_BACK: dict[str, tuple[QueueSettings, Callable[[Engine, Claim], None]]] = {
    "release-with-delay": (FIFO, _delay),
    "release-under-retry-policy": (RETRYING, _release_under_retry),
    "release-claim-under-retry-policy": (RETRYING, _release_claim_under_retry),
    "visibility-0-under-retry-policy": (RETRYING, _visibility_zero_under_retry),
}


def _bodies(engine: Engine, limit: int = 10) -> list[str]:
    return [m.body.decode() for m in engine.claim(P, "q.fifo", limit=limit).messages]


@pytest.mark.parametrize("how", list(GIVE_BACK))
def test_the_rest_of_a_group_waits_for_a_message_given_back_hidden(
    engine: Engine, clock: ManualClock, how: str
) -> None:
    settings, give_back = GIVE_BACK[how]
    # Given a FIFO group a, b, c and another group x
    engine.create_queue(P, "q.fifo", settings=settings)
    engine.send(
        P,
        "q.fifo",
        messages=[NewMessage(body=b.encode(), group_id="g", deduplication_id=b) for b in "abc"]
        + [NewMessage(body=b"x", group_id="other", deduplication_id="x")],
    )
    first = engine.claim(P, "q.fifo", limit=1)
    assert [m.body for m in first.messages] == [b"a"]
    # When a is given back hidden for HIDDEN seconds
    give_back(engine, first)
    # Then b and c are not handed out while a is hidden, though the other group is
    assert _bodies(engine) == ["x"]
    clock.advance(HIDDEN - 1)
    assert _bodies(engine) == []
    # and once a is visible again it comes first, the rest of its group after it
    clock.advance(1)
    assert _bodies(engine) == ["a", "b", "c"]
