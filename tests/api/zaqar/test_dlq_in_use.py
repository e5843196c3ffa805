"""Deleting or purging a DLQ that sources name takes `?force=true` on the Zaqar face: without
it the answer is a 409 naming the sources it would orphan, and nothing changes; a source whose
DLQ is gone says so in its stats."""

from __future__ import annotations

from tests.api.zaqar.conftest import ApiClient, claim, make_queue, post, with_dlq


def given_a_dlq_holding_a_dead_letter(api: ApiClient) -> None:
    with_dlq(api, n=1)
    make_queue(api, "billing", _max_claim_count=2, _dead_letter_queue="orders-dlq")
    post(api, "orders", {"n": 1})
    claim_id, messages = claim(api, "orders", limit=1)
    mid = messages[0]["href"].split("?")[0].rsplit("/", 1)[1]
    r = api.post(f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={claim_id}", json={})
    assert r.status_code == 200, r.text


def test_deleting_a_dlq_in_use_needs_force_and_names_its_sources(api: ApiClient) -> None:
    given_a_dlq_holding_a_dead_letter(api)
    r = api.delete("/v2/queues/orders-dlq")
    assert r.status_code == 409, r.text
    assert r.json()["title"] == "Dead-letter queue in use"
    assert "'billing', 'orders'" in r.json()["description"]
    assert api.get("/v2/queues/orders-dlq/stats").json()["messages"]["total"] == 1
    assert api.get("/v2/queues/orders/stats").json()["dead_letter"]["dlq_missing"] is False
    # With force it goes, and its sources say their DLQ is missing
    assert api.delete("/v2/queues/orders-dlq?force=true").status_code == 204
    for source in ("orders", "billing"):
        dead_letter = api.get(f"/v2/queues/{source}/stats").json()["dead_letter"]
        assert (dead_letter["dlq_missing"], dead_letter["policy_active"]) == (True, False)


def test_purging_a_dlq_in_use_needs_force(api: ApiClient) -> None:
    given_a_dlq_holding_a_dead_letter(api)
    r = api.post("/v2/queues/orders-dlq/purge", json={"resource_types": ["messages"]})
    assert r.status_code == 409, r.text
    assert "'billing', 'orders'" in r.json()["description"]
    assert api.get("/v2/queues/orders-dlq/stats").json()["messages"]["total"] == 1
    # Its subscriptions alone may go without force: no dead letter is lost
    r = api.post("/v2/queues/orders-dlq/purge", json={"resource_types": ["subscriptions"]})
    assert r.status_code == 204, r.text
    r = api.post("/v2/queues/orders-dlq/purge?force=true", json={})
    assert r.status_code == 204, r.text
    assert api.get("/v2/queues/orders-dlq/stats").json()["messages"]["total"] == 0


def test_an_ordinary_queue_needs_no_force(api: ApiClient) -> None:
    make_queue(api, "plain")
    post(api, "plain", 1)
    assert api.post("/v2/queues/plain/purge", json={}).status_code == 204
    assert api.delete("/v2/queues/plain").status_code == 204
