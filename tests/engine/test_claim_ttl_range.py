"""The claim TTL's range, declared once (domain/settings.py) and checked by the engine for every
operation that takes a span bounded by it: a refusal carries the range, so a face words it
without a copy of its own, and comes before anything is written."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from deadletter.domain import errors
from deadletter.domain import settings as declared
from deadletter.domain.model import Claim, Message
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send

LOW, HIGH = declared.CLAIM_TTL.low, declared.CLAIM_TTL.high
SRC = Path(__file__).resolve().parents[2] / "src" / "deadletter"


def _changed(results: list[Message | errors.DeadletterError]) -> None:
    (result,) = results
    if isinstance(result, errors.DeadletterError):
        raise result


# Every engine operation that takes a span bounded as a claim's TTL, on a message `m` that
# `claim` holds.
Operation = Callable[[Engine, Claim, Message, int], object]
OPERATIONS: dict[str, Operation] = {
    "claim": lambda e, c, m, s: e.claim(P, "q", limit=1, ttl=s),
    "acknowledge and claim": lambda e, c, m, s: e.acknowledge_and_claim(
        P, "q", done_claim=c.id, done=[m.id], limit=1, ttl=s
    ),
    "renew": lambda e, c, m, s: e.renew_claim(P, "q", claim_id=c.id, ttl=s),
    "nack delay": lambda e, c, m, s: e.release_message(
        P, "q", message_id=m.id, claim_id=c.id, delay=s
    ),
    "visibility": lambda e, c, m, s: e.change_visibility(
        P, "q", message_id=m.id, claim_id=c.id, timeout=s
    ),
    "visibility batch": lambda e, c, m, s: _changed(
        e.change_visibilities(P, "q", changes=[(m.id, c.id, s, None)])
    ),
}


@pytest.mark.one_store
@pytest.mark.parametrize("seconds", [LOW - 1, HIGH + 1])
@pytest.mark.parametrize("operation", OPERATIONS.values(), ids=list(OPERATIONS))
def test_a_span_outside_the_claim_ttl_range_is_refused_with_the_range(
    engine: Engine, operation: Operation, seconds: int
) -> None:
    # Given a message held by a claim
    engine.create_queue(P, "q")
    (m,) = send(engine, "q", "a")
    claim = engine.claim(P, "q", limit=1, ttl=30)
    # When an operation is given a span just outside the claim TTL's declared range
    with pytest.raises(errors.OutOfRange) as refused:
        operation(engine, claim, m, seconds)
    # I expect the refusal to carry the value and the declared range
    assert (refused.value.value, refused.value.low, refused.value.high) == (seconds, LOW, HIGH)
    # and nothing to have changed: the message is still held, by the same claim
    (held,) = engine.get_claim(P, "q", claim_id=claim.id).messages
    assert (held.id, held.claim_id, held.claim_expires_at) == (m.id, claim.id, claim.expires_at)


def test_the_claim_ttl_bound_is_named_only_where_it_is_declared() -> None:
    """A face or an engine module that spells the bound again checks the range again."""
    spelled = re.compile(r"\bMAX_CLAIM_TTL\b|\b43_?200\b")
    found = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if spelled.search(path.read_text()) and path.parent.name != "domain"
    )
    assert found == []
