"""Where a dead letter goes, end to end, for every consumer group, tag policy, reason and
route: a table of expectations written once (`expected`), and the engine run through each
case, so a new reason or a new kind of policy is covered by adding it to the lists."""

from __future__ import annotations

from itertools import product

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import DeadLetterPolicy, DeadLetterRoute, GroupPolicy
from deadletter.domain.provenance import Reason
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send

pytestmark = pytest.mark.one_store

QUEUE_MAX_CLAIMS = 2
# The tag's own policy, by kind.
TAG_POLICIES = {
    "none": None,
    "own-dlq": GroupPolicy(dead_letter_queue="tag-dlq"),
    "own-max-claims": GroupPolicy(max_claims=1),
    "own-both": GroupPolicy(max_claims=3, dead_letter_queue="tag-dlq"),
}
REASONS = (Reason.MAX_CLAIMS, Reason.REJECTED, Reason.EXPIRED)
GROUPS = (None, "t")


def expected(group: str | None, kind: str, reason: Reason, routed: bool) -> tuple[str, int]:
    """The DLQ the dead letter lands in, and the deliveries it had there."""
    own = TAG_POLICIES[kind] if group is not None else None
    if reason is Reason.EXPIRED:  # ends the message for every group: the queue's
        return ("route-dlq" if routed else "orders-dlq"), 0
    if own is not None and own.dead_letter_queue is not None:
        dlq = "tag-dlq"
    else:
        dlq = "route-dlq" if routed else "orders-dlq"
    if reason is Reason.REJECTED:
        return dlq, 1
    return dlq, own.max_claims if own is not None and own.max_claims else QUEUE_MAX_CLAIMS


@pytest.mark.parametrize(
    ("group", "kind", "reason", "routed"),
    [
        (group, kind, reason, routed)
        for group, kind, reason, routed in product(GROUPS, TAG_POLICIES, REASONS, (False, True))
        # The default group has no tag policy of its own: one kind is enough for it.
        if group is not None or kind == "none"
    ],
)
def test_a_dead_letter_lands_where_the_policies_say(
    engine: Engine, clock: ManualClock, group: str | None, kind: str, reason: Reason, routed: bool
) -> None:
    # Given orders, with its policy, a route for `reason` or not, and tag t of that kind
    for name in ("orders-dlq", "route-dlq", "tag-dlq"):
        engine.create_queue(P, name)
    routes = {reason.value: DeadLetterRoute("route-dlq")} if routed else {}
    engine.create_queue(
        P,
        "orders",
        settings=QueueSettings(
            dead_letter=DeadLetterPolicy("orders-dlq", QUEUE_MAX_CLAIMS, on_expiry=True),
            dead_letter_routes=routes,
        ),
    )
    engine.create_tag(P, "orders", name="t", policy=TAG_POLICIES[kind])
    send(engine, "orders", "m", ttl=600)
    # When the group gives the message up for `reason`
    if reason is Reason.EXPIRED:
        clock.advance(601)
        engine.sweep_expired()
    elif reason is Reason.REJECTED:
        claim = engine.claim(P, "orders", limit=1, tag=group)
        engine.dead_letter(P, "orders", held=[(claim.messages[0].id, claim.id)], tag=group)
    else:
        for _ in range(5):
            claim = engine.claim(P, "orders", limit=1, ttl=30, tag=group)
            if not claim.messages:
                break
            engine.release_claim(P, "orders", claim_id=claim.id, tag=group)
    # Then it is in the DLQ the table names, alone, with the deliveries it had
    dlq, deliveries = expected(group, kind, reason, routed)
    found = {
        name: engine.list_dead_letters(P, name) for name in ("orders-dlq", "route-dlq", "tag-dlq")
    }
    (dead,) = found.pop(dlq)
    assert all(not letters for letters in found.values()), found
    assert dead.provenance is not None
    assert dead.provenance.reason is reason
    assert dead.provenance.claim_count == deliveries
    assert dead.provenance.source_tag == (None if reason is Reason.EXPIRED else group)
