"""Dead-letter policies per consumer group and per reason over the Zaqar face: a tag's own
max claims, retry backoff and DLQ (PUT and PATCH of the tag), and `_dead_letter_routes`."""

from __future__ import annotations

from typing import Any

from deadletter.clock import ManualClock
from tests.api.zaqar.conftest import PATCH_TYPE, ApiClient, make_queue, post, with_dlq


def dead_letters(api: ApiClient, dlq: str) -> list[dict[str, Any]]:
    r = api.get(f"/v2/queues/{dlq}/dead_letters")
    assert r.status_code == 200, r.text
    messages: list[dict[str, Any]] = r.json()["messages"]
    return messages


def tag_claim(api: ApiClient, tag: str | None) -> tuple[str, list[dict[str, Any]]]:
    query = f"&tag={tag}" if tag else ""
    r = api.post(f"/v2/queues/orders/claims?limit=10{query}", json={"ttl": 60})
    assert r.status_code == 201, r.text
    return r.headers["Location"].rsplit("/", 1)[1], r.json()["messages"]


def test_a_tag_takes_its_own_max_claims_and_dlq(api: ApiClient, clock: ManualClock) -> None:
    # Given orders, which dead-letters after 5 claims, and billing, after 1 to billing-dlq
    with_dlq(api, n=5)
    make_queue(api, "billing-dlq")
    r = api.put(
        "/v2/queues/orders/tags/billing",
        json={"max_claims": 1, "dead_letter_queue": "billing-dlq"},
    )
    assert r.status_code == 201, r.text
    assert r.json()["max_claims"] == 1
    assert r.json()["dead_letter"] == {"queue": "billing-dlq", "max_claims": 1, "active": True}
    post(api, "orders", {"n": 1})
    # when billing lets its one claim lapse, its next claim dead-letters the message there,
    tag_claim(api, "billing")
    clock.advance(61)
    assert api.post("/v2/queues/orders/claims?tag=billing", json={}).status_code == 204
    (dead,) = dead_letters(api, "billing-dlq")
    assert dead["provenance"]["source_tag"] == "billing"
    assert dead["provenance"]["reason"] == "max_claims"
    # while the queue's own consumers still receive it.
    assert len(tag_claim(api, None)[1]) == 1
    # A PATCH changes one field; null gives the tag the queue's again.
    r = api.patch("/v2/queues/orders/tags/billing", json={"max_claims": 4})
    assert r.status_code == 200, r.text
    assert (r.json()["max_claims"], r.json()["dead_letter_queue"]) == (4, "billing-dlq")
    r = api.patch(
        "/v2/queues/orders/tags/billing",
        json={"dead_letter_queue": None, "max_claims": None, "retry_policy": {
            "minimum_backoff": 5, "maximum_backoff": 50}},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    shown = api.get("/v2/queues/orders/tags/billing").json()
    assert shown["dead_letter"] == {"queue": "orders-dlq", "max_claims": 5, "active": True}
    assert shown["retry_policy"] == {"minimum_backoff": 5, "maximum_backoff": 50}
    assert [t["max_claims"] for t in api.get("/v2/queues/orders/tags").json()["tags"]] == [None]


def test_a_bad_tag_policy_is_refused(api: ApiClient) -> None:
    with_dlq(api)
    make_queue(api, "chained", _max_claim_count=2, _dead_letter_queue="orders-dlq")
    for body, words in (
        ({"max_claims": 0}, "max claim count"),
        ({"max_claims": "3"}, "integer"),
        ({"dead_letter_queue": "missing"}, "does not exist"),
        ({"dead_letter_queue": "orders"}, "own dead-letter queue"),
        ({"dead_letter_queue": "chained"}, "no chains"),
        ({"retry_policy": {"minimum_backoff": 9}}, "retry_policy"),
        ({"max_claim": 3}, "max_claim"),
    ):
        r = api.put("/v2/queues/orders/tags/billing", json=body)
        assert r.status_code in (400, 404), (body, r.text)
        assert words in r.json()["description"], (body, r.text)
    assert api.get("/v2/queues/orders/tags").json()["tags"] == []
    assert api.patch("/v2/queues/orders/tags/none", json={"max_claims": 2}).status_code == 404


def test_dead_letters_are_routed_by_reason(api: ApiClient) -> None:
    make_queue(api, "orders-dlq")
    make_queue(api, "orders-rejects")
    make_queue(
        api,
        "orders",
        _max_claim_count=3,
        _dead_letter_queue="orders-dlq",
        _dead_letter_routes={"rejected": "orders-rejects"},
    )
    meta = api.get("/v2/queues/orders").json()
    assert meta["_dead_letter_routes"] == {"rejected": "orders-rejects"}
    post(api, "orders", {"n": 1})
    claim_id, (m,) = tag_claim(api, None)
    r = api.post(f"/v2/queues/orders/messages/{m['id']}/dead_letter?claim_id={claim_id}", json={})
    assert r.status_code == 200, r.text
    (dead,) = dead_letters(api, "orders-rejects")
    assert dead["provenance"]["reason"] == "rejected"
    assert dead_letters(api, "orders-dlq") == []
    sources = api.get("/v2/queues/orders-rejects/stats").json()["dead_letter"]["by_source"]
    assert sources == {"orders": 1}
    # Deleting the routed DLQ needs force, and the route turns inactive.
    assert api.delete("/v2/queues/orders-rejects").status_code == 409
    assert api.delete("/v2/queues/orders-rejects?force=true").status_code == 204
    meta = api.get("/v2/queues/orders").json()
    assert meta["_dead_letter_routes_inactive"] == ["rejected"]
    # A JSON patch removes the route.
    r = api.patch(
        "/v2/queues/orders",
        json=[{"op": "remove", "path": "/metadata/_dead_letter_routes"}],
        headers={"Content-Type": PATCH_TYPE},
    )
    assert r.status_code == 200, r.text
    assert "_dead_letter_routes" not in api.get("/v2/queues/orders").json()


def test_bad_routes_are_refused(api: ApiClient) -> None:
    make_queue(api, "q1")
    make_queue(api, "q2", _max_claim_count=2, _dead_letter_queue="q1")
    for metadata, words in (
        ({"_dead_letter_routes": {"expired": "q1"}}, "need the queue's dead-letter policy"),
        ({"_dead_letter_routes": ["q1"]}, "_dead_letter_routes must be"),
        ({"_max_claim_count": 2, "_dead_letter_queue": "q1",
          "_dead_letter_routes": {"bored": "q1"}}, "not a dead-letter reason"),
        ({"_max_claim_count": 2, "_dead_letter_queue": "q1",
          "_dead_letter_routes": {"expired": "q2"}}, "no chains"),
        ({"_max_claim_count": 2, "_dead_letter_queue": "q1",
          "_dead_letter_routes": {"expired": "nope"}}, "does not exist"),
    ):  # fmt: skip
        r = api.put("/v2/queues/orders", json=metadata)
        assert r.status_code in (400, 404), (metadata, r.text)
        assert words in r.json()["description"], (metadata, r.text)


def test_the_sources_of_a_dlq_say_what_names_it(api: ApiClient) -> None:
    make_queue(api, "shared-dlq")
    make_queue(api, "orders-dlq")
    make_queue(api, "payments")
    assert (
        api.put(
            "/v2/queues/payments/tags/audit",
            json={"max_claims": 2, "dead_letter_queue": "shared-dlq"},
        ).status_code
        == 201
    )
    make_queue(
        api,
        "orders",
        _max_claim_count=3,
        _dead_letter_queue="orders-dlq",
        _dead_letter_routes={"expired": "shared-dlq", "rejected": "shared-dlq"},
    )
    r = api.get("/v2/queues/shared-dlq/dead_letter_sources")
    assert r.status_code == 200, r.text
    assert r.json()["sources"] == [
        {"name": "orders", "href": "/v2/queues/orders", "max_claim_count": 3, "active": True,
         "via": [{"kind": "route", "key": "expired"}, {"kind": "route", "key": "rejected"}]},
        {"name": "payments", "href": "/v2/queues/payments", "max_claim_count": None,
         "active": True, "via": [{"kind": "tag", "key": "audit"}]},
    ]  # fmt: skip
