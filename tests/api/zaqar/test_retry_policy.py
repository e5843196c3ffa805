"""`_retry_policy` on the Zaqar face: kept and shown as given, refused in Zaqar's error format
when malformed, and applied to a release without a delay."""

from __future__ import annotations

from typing import Any

import pytest

from deadletter.api.zaqar.serialize import iso
from deadletter.clock import ManualClock
from deadletter.domain.model import MAX_BACKOFF
from deadletter.domain.settings import MAX_CLAIMS
from tests.api.zaqar.conftest import ApiClient, claim, make_queue, post

POLICY = {"minimum_backoff": 10, "maximum_backoff": 15}


def test_the_policy_is_kept_and_shown(api: ApiClient) -> None:
    make_queue(api, "q", _retry_policy=POLICY)
    assert api.get("/v2/queues/q").json()["_retry_policy"] == POLICY
    make_queue(api, "plain")
    assert "_retry_policy" not in api.get("/v2/queues/plain").json()


@pytest.mark.parametrize(
    "policy",
    [
        {"minimum_backoff": 11, "maximum_backoff": 10},
        {"minimum_backoff": 10},
        {"minimum_backoff": 1, "maximum_backoff": 2, "jitter": 1},
        {"minimum_backoff": "1", "maximum_backoff": 2},
        {"minimum_backoff": None, "maximum_backoff": 2},
        [1, 2],
        10,
    ],
)
def test_a_malformed_policy_is_refused(api: ApiClient, policy: Any) -> None:
    r = api.put("/v2/queues/q", json={"_retry_policy": policy})
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"title", "description"}
    assert api.get("/v2/queues/q").status_code == 404


def test_a_release_without_delay_backs_off(api: ApiClient, clock: ManualClock) -> None:
    make_queue(api, "q", _retry_policy=POLICY)
    (mid,) = post(api, "q", "job")
    for expected in (10, 15):  # doubled, then capped
        cid, _ = claim(api, "q")
        r = api.post(f"/v2/queues/q/messages/{mid}/release?claim_id={cid}", json={})
        assert r.status_code == 204
        assert api.get("/v2/queues/q/stats").json()["messages"]["delayed"] == 1
        clock.advance(expected - 1)
        assert claim(api, "q") == (None, [])
        clock.advance(1)


def test_a_lapsed_claim_backs_off(api: ApiClient, clock: ManualClock) -> None:
    # Given a queue backing off 10 s, then 15 s
    make_queue(api, "q", _retry_policy=POLICY)
    (mid,) = post(api, "q", "job")
    for expected in (10, 15):  # doubled, then capped
        # When a claim of 60 s lapses without the message being deleted or released
        assert claim(api, "q", ttl=60, grace=60)[0] is not None
        clock.advance(60)
        # It is delayed, not claimed, for the backoff, and claimed again at its end
        state = api.get(f"/v2/queues/q/messages/{mid}").json()
        assert "claim_id" not in state
        assert state["visible_at"] == iso(clock.now() + expected)
        counts = api.get("/v2/queues/q/stats").json()["messages"]
        assert (counts["claimed"], counts["delayed"]) == (0, 1)
        clock.advance(expected - 1)
        assert claim(api, "q") == (None, [])
        clock.advance(1)
    assert claim(api, "q")[1][0]["id"] == mid


def test_the_openapi_document_lists_both_keys_with_their_declared_ranges(api: ApiClient) -> None:
    metadata = api.get("/openapi.json").json()["components"]["schemas"]["Metadata"]["properties"]
    redelivery = metadata["_max_redelivery"]
    assert (redelivery["minimum"], redelivery["maximum"]) == (
        MAX_CLAIMS.low - 1,
        MAX_CLAIMS.high - 1,
    )
    policy = metadata["_retry_policy"]
    assert set(policy["required"]) == {"minimum_backoff", "maximum_backoff"}
    for member in policy["required"]:
        assert (
            policy["properties"][member]["minimum"],
            policy["properties"][member]["maximum"],
        ) == (
            0,
            MAX_BACKOFF,
        )


def test_a_template_gives_its_retry_policy_to_the_queues_it_makes(api: ApiClient) -> None:
    # Given a template with a retry policy
    r = api.put("/v2/templates/jobs", json={"pattern": "jobs-*", "retry_policy": POLICY})
    assert r.status_code == 201, r.text
    assert r.json()["retry_policy"] == POLICY
    # When a queue it matches is created, it has the policy; a PATCH of null clears it
    make_queue(api, "jobs-1")
    assert api.get("/v2/queues/jobs-1").json()["_retry_policy"] == POLICY
    cleared = api.patch("/v2/templates/jobs", json={"retry_policy": None})
    assert cleared.json()["retry_policy"] is None
    # A policy out of range or of the wrong shape is refused in Zaqar's format
    for policy, words in [
        ({"minimum_backoff": 11, "maximum_backoff": 10}, "minimum backoff"),
        ({"minimum_backoff": 1, "maximum_backoff": MAX_BACKOFF + 1}, "retry_policy"),
        ({"minimum_backoff": 1}, "retry_policy"),
    ]:
        r = api.put("/v2/templates/t", json={"pattern": "*", "retry_policy": policy})
        assert r.status_code == 400 and words in r.json()["description"], (policy, r.text)
