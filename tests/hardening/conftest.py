"""A bystander for every hardening test: queues and messages of this project and another that
a refused request must leave exactly as they were."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.api.zaqar.conftest import ApiClient, api, claim, make_queue, post, with_dlq

__all__ = ["api"]

OTHER = {"X-Project-ID": "bystanders"}


def state(api: ApiClient) -> dict[str, Any]:
    """Everything a bystander can observe: messages (claimed too) and stats of its queues."""
    out: dict[str, Any] = {}
    for headers, queue in (({}, "keep"), (OTHER, "keep"), ({}, "orders-dlq")):
        listed = api.get(
            f"/v2/queues/{queue}/messages?include_claimed=true&echo=true&limit=20", headers=headers
        )
        stats = api.get(f"/v2/queues/{queue}/stats", headers=headers)
        key = f"{headers.get('X-Project-ID', 'default')}/{queue}"
        out[key] = (listed.status_code, listed.json(), stats.json())
    return out


@pytest.fixture
def untouched(api: ApiClient) -> Callable[[], None]:
    """Sets up bystanders (a claimed and a free message in two projects, a dead letter);
    call the result after the bad request to check nothing of theirs changed."""
    make_queue(api, "keep")
    post(api, "keep", {"n": 1}, {"n": 2})
    claim(api, "keep", limit=1)
    api.put("/v2/queues/keep", headers=OTHER, json={})
    api.post("/v2/queues/keep/messages", headers=OTHER, json={"messages": [{"body": "x"}]})
    with_dlq(api, "orders", "orders-dlq", n=1)
    ids = post(api, "orders", "dead")
    claim_id, _ = claim(api, "orders")
    r = api.post(
        "/v2/queues/orders/dead_letter",
        json={"messages": [{"id": ids[0], "claim_id": claim_id}]},
    )
    assert r.status_code == 200, r.text
    before = state(api)

    def check() -> None:
        assert state(api) == before

    return check


def refused(r: Any, status: int, words: str) -> None:
    """A refusal in Zaqar's shape whose description names what was wrong."""
    assert r.status_code == status, r.text
    doc = r.json()
    assert set(doc) == {"title", "description"}, doc
    assert words in doc["description"], doc
