"""Zaqar subscriptions over HTTP: CRUD as Zaqar answers it, and the edge's refusals."""

from __future__ import annotations

from deadletter.clock import ManualClock
from tests.api.zaqar.conftest import ApiClient, make_queue

SUBS = "/v2/queues/q/subscriptions"
HOOK = "http://hooks.example/a"


def subscribe(api: ApiClient, **doc: object) -> str:
    r = api.post(SUBS, json={"subscriber": HOOK, "ttl": 600, **doc})
    assert r.status_code == 201, r.text
    return str(r.json()["subscription_id"])


def test_create_get_list_update_delete(api: ApiClient, clock: ManualClock) -> None:
    make_queue(api, "q")
    sid = subscribe(api, options={"post_headers": {"X-Token": "t"}})
    clock.advance(5)
    r = api.get(f"{SUBS}/{sid}")
    assert r.status_code == 200
    assert r.json() == {
        "id": sid, "source": "q", "subscriber": HOOK, "ttl": 600, "age": 5,
        "options": {"post_headers": {"X-Token": "t"}}, "confirmed": False,
    }  # fmt: skip
    listed = api.get(SUBS).json()
    assert [s["id"] for s in listed["subscriptions"]] == [sid]
    assert listed["links"][0]["rel"] == "next"
    r = api.patch(f"{SUBS}/{sid}", json={"subscriber": HOOK + "2", "ttl": 1000})
    assert r.status_code == 204, r.text
    assert api.get(f"{SUBS}/{sid}").json()["subscriber"] == HOOK + "2"
    assert api.delete(f"{SUBS}/{sid}").status_code == 204
    assert api.get(f"{SUBS}/{sid}").status_code == 404
    assert api.delete(f"{SUBS}/{sid}").status_code == 204  # as in Zaqar


def test_listing_is_paged_by_marker(api: ApiClient) -> None:
    make_queue(api, "q")
    ids = sorted(subscribe(api, subscriber=f"{HOOK}/{i}") for i in range(3))
    first = api.get(f"{SUBS}?limit=2").json()
    assert [s["id"] for s in first["subscriptions"]] == ids[:2]
    rest = api.get(first["links"][0]["href"]).json()
    assert [s["id"] for s in rest["subscriptions"]] == ids[2:]
    assert api.get(f"{SUBS}?limit=21").status_code == 400


def test_subscribing_again_answers_the_same_subscription(api: ApiClient) -> None:
    make_queue(api, "q")
    assert subscribe(api) == subscribe(api)


def test_a_first_subscription_creates_the_queue(api: ApiClient) -> None:
    subscribe(api)
    assert api.get("/v2/queues/q").status_code == 200


def test_a_subscription_expires_after_its_ttl(api: ApiClient, clock: ManualClock) -> None:
    make_queue(api, "q")
    sid = subscribe(api, ttl=60)
    clock.advance(60)
    assert api.get(f"{SUBS}/{sid}").status_code == 404
    assert api.get(SUBS).json()["subscriptions"] == []
    assert api.patch(f"{SUBS}/{sid}", json={"ttl": 120}).status_code == 404


def test_only_webhooks_are_supported(api: ApiClient) -> None:
    make_queue(api, "q")
    r = api.post(SUBS, json={"subscriber": "mailto:ops@example.com", "ttl": 600})
    assert r.status_code == 400
    assert "http:// or https://" in r.json()["description"]
    assert api.get(SUBS).json()["subscriptions"] == []  # nothing was subscribed


def test_bad_subscriptions_are_refused(api: ApiClient) -> None:
    make_queue(api, "q")
    for doc in (
        {},
        {"ttl": 600},
        {"subscriber": 7},
        {"subscriber": HOOK, "ttl": 59},
        {"subscriber": HOOK, "ttl": "600"},
        {"subscriber": HOOK, "options": []},
        {"subscriber": HOOK, "colour": "red"},
    ):
        r = api.post(SUBS, json=doc)
        assert r.status_code == 400, (doc, r.text)
        assert r.json()["title"]
    assert api.get(SUBS).json()["subscriptions"] == []  # none of them was subscribed
    sid = subscribe(api)
    before = api.get(f"{SUBS}/{sid}").json()
    assert api.patch(f"{SUBS}/{sid}", json={}).status_code == 400
    assert api.patch(f"{SUBS}/{sid}", json={"subscriber": "mailto:x@y"}).status_code == 400
    assert api.get(f"{SUBS}/{sid}").json() == before  # neither refusal changed it


def test_changing_to_a_taken_subscriber_conflicts(api: ApiClient) -> None:
    make_queue(api, "q")
    subscribe(api)
    other = subscribe(api, subscriber=HOOK + "/b")
    assert api.patch(f"{SUBS}/{other}", json={"subscriber": HOOK}).status_code == 409
    # the refused change left both as they were
    subscribers = sorted(s["subscriber"] for s in api.get(SUBS).json()["subscriptions"])
    assert subscribers == [HOOK, HOOK + "/b"]


def test_purging_subscriptions_removes_them(api: ApiClient) -> None:
    make_queue(api, "q")
    subscribe(api)
    r = api.post("/v2/queues/q/purge", json={"resource_types": ["subscriptions"]})
    assert r.status_code == 204
    assert api.get(SUBS).json()["subscriptions"] == []


def test_inside_destinations_and_owned_headers_are_refused_with_zaqar_errors(
    api: ApiClient,
) -> None:
    # Given a server whose operator allows no private network
    make_queue(api, "q")
    refused = [
        {"subscriber": "http://169.254.169.254/latest/meta-data/"},
        {"subscriber": "http://2130706433:8080/"},  # 127.0.0.1
        {"subscriber": "http://[::ffff:10.0.0.1]/"},
        {"subscriber": HOOK, "options": {"post_headers": {"Host": "metadata.internal"}}},
        {"subscriber": HOOK, "options": {"post_headers": {"transfer-encoding": "chunked"}}},
        {"subscriber": HOOK, "options": {"post_headers": {"X-A": "a\r\nB: b"}}},
    ]
    for doc in refused:
        r = api.post(SUBS, json={"ttl": 600, **doc})
        assert r.status_code == 400, (doc, r.text)
        assert set(r.json()) == {"title", "description"}
    # nothing was made, and a subscription cannot be changed into one of them either
    assert api.get(SUBS).json()["subscriptions"] == []
    sid = subscribe(api)
    for doc in refused:
        assert api.patch(f"{SUBS}/{sid}", json=doc).status_code == 400, doc
    assert api.get(f"{SUBS}/{sid}").json()["subscriber"] == HOOK
