"""Consumer tags over HTTP: the tags resource of a queue and the `tag` selector."""

from __future__ import annotations

from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from tests.api.zaqar.conftest import ApiClient, claim, make_queue, post, with_dlq


def tag_claim(api: ApiClient, queue: str, tag: str, **body: object) -> tuple[str | None, list]:  # type: ignore[type-arg]
    r = api.post(f"/v2/queues/{queue}/claims?limit=10&tag={tag}", json=body)
    if r.status_code == 204:
        return None, []
    assert r.status_code == 201, r.text
    return r.headers["Location"].rsplit("/", 1)[1], r.json()["messages"]


def test_tags_are_a_resource_of_the_queue(api: ApiClient) -> None:
    make_queue(api, "orders")
    r = api.put("/v2/queues/orders/tags/billing", json={})
    assert r.status_code == 201, r.text
    assert r.headers["Location"] == "/v2/queues/orders/tags/billing"
    assert api.put("/v2/queues/orders/tags/billing", json={}).status_code == 409
    r = api.put(
        "/v2/queues/orders/tags/eu", json={"filter": {"attribute": "region", "value": "eu"}}
    )
    assert r.status_code == 201, r.text
    post(api, "orders", {"n": 1})
    listed = api.get("/v2/queues/orders/tags").json()["tags"]
    assert [t["name"] for t in listed] == ["billing", "eu"]
    shown = api.get("/v2/queues/orders/tags/billing").json()
    assert shown["messages"] == {"ready": 1, "claimed": 0, "delivered": 0, "dead_lettered": 0}
    assert api.get("/v2/queues/orders/tags/eu").json()["filter"] == {
        "attribute": "region",
        "value": "eu",
    }
    assert api.get("/v2/queues/orders/tags/none").status_code == 404
    assert api.delete("/v2/queues/orders/tags/eu").status_code == 204
    assert [t["name"] for t in api.get("/v2/queues/orders/tags").json()["tags"]] == ["billing"]


def test_a_bad_tag_is_refused_before_anything_is_written(api: ApiClient) -> None:
    make_queue(api, "orders")
    assert api.put("/v2/queues/orders/tags/billing", json={"nope": 1}).status_code == 400
    assert api.put("/v2/queues/orders/tags/billing", json={"filter": "x"}).status_code == 400
    assert api.get("/v2/queues/orders/tags").json()["tags"] == []
    r = api.post("/v2/queues/orders/claims?tag=no%20spaces", json={})
    assert r.status_code == 400
    assert set(r.json()) == {"title", "description"}
    assert api.post("/v2/queues/orders/claims?tag=missing", json={}).status_code == 404


def test_poison_for_one_tag_goes_to_the_dlq_for_it_alone_and_is_redriven_to_it(
    api: ApiClient, engine: Engine, clock: ManualClock
) -> None:
    # Given a queue that dead-letters after 2 claims, with tags billing and shipping
    with_dlq(api, n=2)
    for tag in ("billing", "shipping"):
        assert api.put(f"/v2/queues/orders/tags/{tag}", json={}).status_code == 201
    (mid,) = post(api, "orders", {"order": 1})
    # when billing's consumers let it lapse twice,
    for _ in range(2):
        claim_id, messages = tag_claim(api, "orders", "billing", ttl=60)
        assert [m["id"] for m in messages] == [mid]
        clock.advance(61)
    # billing's next claim dead-letters it for billing,
    assert tag_claim(api, "orders", "billing") == (None, [])
    r = api.get("/v2/queues/orders-dlq/dead_letters?source_tag=billing")
    (dead,) = r.json()["messages"]
    assert dead["provenance"]["source_tag"] == "billing"
    assert dead["provenance"]["original_message_id"] == mid
    assert api.get("/v2/queues/orders-dlq/dead_letters?source_tag=shipping").json() == {
        "messages": [],
        "links": [],
    }
    # shipping still receives it and acknowledges it,
    claim_id, messages = tag_claim(api, "orders", "shipping")
    assert [m["id"] for m in messages] == [mid]
    r = api.delete(f"/v2/queues/orders/messages/{mid}?claim_id={claim_id}&tag=shipping")
    assert r.status_code == 204
    # the untagged consumers too,
    claim_id, messages = claim(api, "orders")
    assert [m["id"] for m in messages] == [mid]
    api.delete(f"/v2/queues/orders/messages/{mid}?claim_id={claim_id}")
    shown = api.get("/v2/queues/orders/tags/billing").json()["messages"]
    assert shown["dead_lettered"] == 1
    # and a redrive of billing's dead letters brings it back to billing only.
    r = api.post("/v2/queues/orders-dlq/redrives", json={"source_tag": "billing"})
    assert r.status_code == 201, r.text
    Worker(engine).run_once()
    claim_id, messages = tag_claim(api, "orders", "billing")
    assert [m["body"] for m in messages] == [{"order": 1}]
    assert tag_claim(api, "orders", "shipping") == (None, [])
    assert claim(api, "orders") == (None, [])


def test_the_tag_selector_on_release_dead_letter_and_claims(api: ApiClient) -> None:
    with_dlq(api, n=5)
    api.put("/v2/queues/orders/tags/a", json={})
    (mid,) = post(api, "orders", "x")
    claim_id, _ = tag_claim(api, "orders", "a")
    q = f"claim_id={claim_id}&tag=a"
    assert (
        api.patch(f"/v2/queues/orders/claims/{claim_id}?tag=a", json={"ttl": 120}).status_code
        == 204
    )
    r = api.get(f"/v2/queues/orders/claims/{claim_id}?tag=a")
    assert [m["id"] for m in r.json()["messages"]] == [mid]
    assert api.post(f"/v2/queues/orders/messages/{mid}/release?{q}", json={}).status_code == 204
    claim_id, _ = tag_claim(api, "orders", "a")
    r = api.post(
        f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={claim_id}&tag=a",
        json={"description": "bad for a"},
    )
    assert r.status_code == 200, r.text
    assert tag_claim(api, "orders", "a") == (None, [])
    # The untagged consumers never noticed.
    assert [m["id"] for m in claim(api, "orders")[1]] == [mid]


def test_metrics_count_each_tags_deliveries(api: ApiClient) -> None:
    make_queue(api, "orders")
    api.put("/v2/queues/orders/tags/billing", json={})
    (mid,) = post(api, "orders", "x")
    claim_id, _ = tag_claim(api, "orders", "billing")
    api.delete(f"/v2/queues/orders/messages/{mid}?claim_id={claim_id}&tag=billing")
    text = api.get("/metrics").text
    for event in ("claimed", "acknowledged"):
        labels = f'event="{event}",project="123456789012",queue="orders",tag="billing"'
        line = "deadletter_tag_messages_total{" + labels + "} 1.0"
        assert line in text, text


def test_metrics_gauge_each_tags_ready_and_claimed_messages(api: ApiClient) -> None:
    make_queue(api, "orders")
    api.put("/v2/queues/orders/tags/billing", json={})
    api.put("/v2/queues/orders/tags/audit", json={})
    post(api, "orders", "a", "b", "c")
    r = api.post("/v2/queues/orders/claims?limit=1&tag=billing", json={})
    assert r.status_code == 201, r.text
    text = api.get("/metrics").text
    for tag, ready, claimed in (("billing", 2, 1), ("audit", 3, 0)):
        labels = f'project="123456789012",queue="orders",tag="{tag}"'
        assert f"deadletter_tag_messages_ready{{{labels}}} {ready}.0" in text, text
        assert f"deadletter_tag_messages_claimed{{{labels}}} {claimed}.0" in text, text
