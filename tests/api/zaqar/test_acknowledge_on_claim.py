"""A claim that acknowledges the consumer's last batch first: one request, one transaction."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient, claim, make_queue, post

PROJECT = "123456789012"  # the project the test client's requests go to


def _ack(claim_id: str, ids: list[str]) -> dict[str, Any]:
    return {"acknowledge": {"claim_id": claim_id, "ids": ids}}


def _ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["href"].split("?")[0].rsplit("/", 1)[1] for m in messages]


def test_the_last_batch_is_acknowledged_and_the_next_claimed(api: ApiClient) -> None:
    make_queue(api, "q")
    post(api, "q", *range(15))
    first, messages = claim(api, "q")
    assert first is not None
    done = _ids(messages)
    r = api.post("/v2/queues/q/claims", json=_ack(first, done))
    assert r.status_code == 201
    assert r.json()["acknowledged"] == done
    second = r.headers["Location"].rsplit("/", 1)[1]
    nxt = r.json()["messages"]
    assert len(nxt) == 5 and not set(_ids(nxt)) & set(done)
    assert all(m["href"].endswith(f"?claim_id={second}") for m in nxt)
    stats = api.get("/v2/queues/q/stats").json()["messages"]
    assert stats["total"] == 5 and stats["claimed"] == 5
    for mid in done:
        assert api.get(f"/v2/queues/q/messages/{mid}").status_code == 404


def test_with_nothing_left_to_claim_the_answer_still_says_what_was_acknowledged(
    api: ApiClient,
) -> None:
    make_queue(api, "q")
    post(api, "q", 1, 2)
    cid, messages = claim(api, "q")
    assert cid is not None
    r = api.post("/v2/queues/q/claims", json=_ack(cid, _ids(messages)))
    assert r.status_code == 200
    assert r.json() == {"messages": [], "acknowledged": _ids(messages)}
    assert api.get("/v2/queues/q/stats").json()["messages"]["total"] == 0


def test_messages_the_claim_no_longer_holds_are_left_alone(
    api: ApiClient, clock: ManualClock
) -> None:
    make_queue(api, "q")
    post(api, "q", 1)
    stale, messages = claim(api, "q", ttl=60)
    assert stale is not None
    clock.advance(61)  # the claim lapses; another consumer takes the message
    fresh, again = claim(api, "q")
    assert fresh is not None and _ids(again) == _ids(messages)
    r = api.post("/v2/queues/q/claims", json=_ack(stale, _ids(messages)))
    assert r.status_code == 200 and r.json()["acknowledged"] == []
    # Still the other consumer's: its own acknowledgement works.
    mid = _ids(messages)[0]
    assert api.delete(f"/v2/queues/q/messages/{mid}?claim_id={fresh}").status_code == 204


def test_counts_and_listeners_see_the_acknowledgement(api: ApiClient, engine: Engine) -> None:
    make_queue(api, "q")
    post(api, "q", *range(3))
    cid, messages = claim(api, "q")
    assert cid is not None
    api.post("/v2/queues/q/claims", json=_ack(cid, _ids(messages)))
    stats = engine.stats(PROJECT, "q")
    assert stats.acknowledged == 3


BAD = [
    {"acknowledge": []},
    {"acknowledge": "abc"},
    {"acknowledge": {"ids": ["a"]}},
    {"acknowledge": {"claim_id": "c"}},
    {"acknowledge": {"claim_id": "c", "ids": []}},
    {"acknowledge": {"claim_id": "c", "ids": "a"}},
    {"acknowledge": {"claim_id": "c", "ids": [1]}},
    {"acknowledge": {"claim_id": "c", "ids": [""]}},
    {"acknowledge": {"claim_id": "", "ids": ["a"]}},
    {"acknowledge": {"claim_id": 7, "ids": ["a"]}},
    {"acknowledge": {"claim_id": "c", "ids": ["a"] * 21}},
    {"acknowledge": {"claim_id": "c", "ids": ["a\x00"]}},
    {"acknowledge": {"claim_id": "c\x00", "ids": ["a"]}},
    {"acknowledge": {"claim_id": "c", "ids": ["a"], "extra": 1}},
]


@pytest.mark.parametrize("body", BAD)
def test_a_malformed_acknowledgement_is_400_and_changes_nothing(
    api: ApiClient, body: dict[str, Any]
) -> None:
    make_queue(api, "q")
    post(api, "q", 1, 2)
    cid, _ = claim(api, "q", limit=1)
    assert cid is not None
    r = api.post("/v2/queues/q/claims", json=body)
    assert r.status_code == 400, r.text
    assert "title" in r.json() and "description" in r.json()
    stats = api.get("/v2/queues/q/stats").json()["messages"]
    assert stats["total"] == 2 and stats["claimed"] == 1


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    done=st.lists(st.integers(0, 9), unique=True, max_size=10),
    extra=st.lists(st.text(min_size=1, max_size=8), max_size=3),
)
def test_exactly_the_held_ids_given_are_acknowledged(
    api: ApiClient, done: list[int], extra: list[str]
) -> None:
    name = f"q-{uuid.uuid4().hex}"  # a queue of its own for each example
    make_queue(api, name)
    post(api, name, *range(10))
    cid, messages = claim(api, name)
    assert cid is not None
    ids = _ids(messages)
    given_ids = [ids[i] for i in done] + [e.replace("\x00", "") or "x" for e in extra]
    if not given_ids:
        return
    r = api.post(f"/v2/queues/{name}/claims?limit=1", json=_ack(cid, given_ids))
    assert r.status_code == 200  # the other messages are still claimed: nothing to claim
    assert sorted(r.json()["acknowledged"]) == sorted(ids[i] for i in done)
    total = api.get(f"/v2/queues/{name}/stats").json()["messages"]["total"]
    assert total == 10 - len(done)
