"""Bounded queues on the Zaqar face: `_max_messages`, `_max_bytes` and `_overflow` kept and
shown, refused when malformed, and a send to a full queue refused with 409 in Zaqar's error
format (or the oldest pushed out to the DLQ, counted in stats)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.zaqar.conftest import ApiClient, make_queue, post


def test_the_bounds_are_kept_and_shown(api: ApiClient) -> None:
    make_queue(api, "q", _max_messages=10, _max_bytes=1000, _overflow="reject-publish")
    shown = api.get("/v2/queues/q").json()
    assert shown["_max_messages"] == 10
    assert shown["_max_bytes"] == 1000
    assert shown["_overflow"] == "reject-publish"
    make_queue(api, "plain")
    plain = api.get("/v2/queues/plain").json()
    assert not {"_max_messages", "_max_bytes", "_overflow"} & set(plain)
    # Every key with its default, for a client that shows every setting.
    every = api.get("/v2/queues/plain?defaults=true").json()
    assert (every["_max_messages"], every["_max_bytes"], every["_overflow"]) == (
        None,
        None,
        "drop-head",
    )


def test_a_patch_removes_a_bound(api: ApiClient) -> None:
    make_queue(api, "q", _max_messages=1, _overflow="reject-publish")
    post(api, "q", 1)
    assert api.post("/v2/queues/q/messages", json={"messages": [{"body": 2}]}).status_code == 409
    r = api.patch(
        "/v2/queues/q",
        json=[{"op": "remove", "path": "/metadata/_max_messages"}],
        headers={"Content-Type": "application/openstack-messaging-v2.0-json-patch"},
    )
    assert r.status_code == 200, r.text
    post(api, "q", 2, 3)


@pytest.mark.parametrize(
    "metadata",
    [
        {"_max_messages": 0},
        {"_max_messages": "10"},
        {"_max_bytes": 0},
        {"_max_bytes": 1.5},
        {"_overflow": "drop-tail"},
        {"_overflow": 1},
    ],
)
def test_malformed_bounds_are_refused(api: ApiClient, metadata: dict[str, Any]) -> None:
    r = api.put("/v2/queues/q", json=metadata)
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"title", "description"}
    assert api.get("/v2/queues/q").status_code == 404


@pytest.mark.parametrize("overflow", ["reject-publish", "reject-publish-dlx"])
def test_a_send_to_a_full_queue_is_refused_with_409(api: ApiClient, overflow: str) -> None:
    make_queue(api, "dlq")
    make_queue(
        api,
        "q",
        _max_messages=2,
        _overflow=overflow,
        _max_claim_count=3,
        _dead_letter_queue="dlq",
    )
    post(api, "q", "a")
    # All or nothing: two messages do not fit in the one place left.
    r = api.post("/v2/queues/q/messages", json={"messages": [{"body": "b"}, {"body": "c"}]})
    assert r.status_code == 409, r.text
    assert r.json()["title"] == "Queue is full"
    assert "1 of at most 2 messages" in r.json()["description"]
    assert api.get("/v2/queues/q/stats").json()["messages"]["total"] == 1
    dead = api.get("/v2/queues/dlq/stats").json()["messages"]["total"]
    assert dead == (2 if overflow == "reject-publish-dlx" else 0)


def test_drop_head_moves_the_oldest_to_the_dlq(api: ApiClient) -> None:
    make_queue(api, "dlq")
    make_queue(api, "q", _max_messages=2, _max_claim_count=3, _dead_letter_queue="dlq")
    post(api, "q", "a", "b", "c")
    stats = api.get("/v2/queues/q/stats").json()
    assert stats["messages"]["total"] == 2
    assert stats["dead_letter"]["dead_lettered"] == {"maxlen": 1}
    (letter,) = api.get("/v2/queues/dlq/dead_letters").json()["messages"]
    assert letter["body"] == "a"
    assert letter["provenance"]["reason"] == "maxlen"


def test_drop_head_without_a_dlq_counts_what_it_drops(api: ApiClient) -> None:
    make_queue(api, "q", _max_bytes=3)
    post(api, "q", "a", "b")  # JSON bodies: 3 bytes each
    stats = api.get("/v2/queues/q/stats").json()
    assert stats["messages"]["total"] == 1
    assert stats["dead_letter"]["dropped"] == {"maxlen": 1}
    dropped = [
        line
        for line in api.get("/metrics").text.splitlines()
        if line.startswith("deadletter_messages_dropped_total{") and 'reason="maxlen"' in line
    ]
    assert [line.rsplit(" ", 1)[1] for line in dropped] == ["1.0"]


def test_the_openapi_document_lists_the_keys_and_the_refusal(api: ApiClient) -> None:
    doc = api.get("/openapi.json").json()
    keys = doc["components"]["schemas"]["Metadata"]["properties"]
    assert keys["_max_messages"]["minimum"] == 1
    assert keys["_max_bytes"]["minimum"] == 1
    assert keys["_overflow"]["enum"] == ["drop-head", "reject-publish", "reject-publish-dlx"]
    (post,) = (p["post"] for path, p in doc["paths"].items() if path.endswith("}/messages"))
    assert "409" in post["responses"]
