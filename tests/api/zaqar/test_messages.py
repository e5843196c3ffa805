"""Zaqar v2 messages and claims over HTTP, error paths included."""

from __future__ import annotations

import json

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import CLIENT_ID, OTHER_CLIENT, ApiClient, claim, make_queue, post


def test_post_answers_201_with_location_and_resources(api: ApiClient) -> None:
    make_queue(api, "q")
    r = api.post("/v2/queues/q/messages", json={"messages": [{"body": {"a": 1}}, {"body": "x"}]})
    assert r.status_code == 201
    resources = r.json()["resources"]
    ids = [h.rsplit("/", 1)[1] for h in resources]
    assert r.headers["Location"] == f"/v2/queues/q/messages?ids={','.join(ids)}"
    got = api.get(r.headers["Location"]).json()["messages"]
    assert [m["body"] for m in got] == [{"a": 1}, "x"]


def test_posting_to_a_missing_queue_creates_it_with_zaqar_defaults(api: ApiClient) -> None:
    post(api, "fresh", "hello")
    meta = api.get("/v2/queues/fresh").json()
    assert meta["_default_message_ttl"] == 3600
    assert "_default_claim_ttl" not in meta  # left out as it holds Zaqar's 300


@pytest.mark.parametrize(
    "message",
    [
        {"body": 1, "ttl": 59},
        {"body": 1, "ttl": 1_209_601},
        {"body": 1, "delay": 901},
        {"body": 1, "delay": -1},
        {"ttl": 300},
        {"body": 1, "attributes": {"DLQ.sourceQueue": {"type": "String", "value": "x"}}},
        {"body": 1, "attributes": {"n": {"type": "Float", "value": "1"}}},
        {"body": 1, "dead_letter_eligible": "no"},
    ],
)
def test_invalid_messages_are_400(api: ApiClient, message: dict[str, object]) -> None:
    make_queue(api, "q")
    r = api.post("/v2/queues/q/messages", json={"messages": [message]})
    assert r.status_code == 400, r.text


@pytest.mark.parametrize("body", [b"", b"[]", b'{"messages": []}', b"{not json"])
def test_malformed_post_bodies_are_400(api: ApiClient, body: bytes) -> None:
    make_queue(api, "q")
    assert api.post("/v2/queues/q/messages", content=body).status_code == 400


def test_ttl_above_the_queues_maximum_is_refused(api: ApiClient) -> None:
    make_queue(api, "q", _max_message_ttl=600, _default_message_ttl=300)
    r = api.post("/v2/queues/q/messages", json={"messages": [{"body": 1, "ttl": 601}]})
    assert r.status_code == 400
    assert (
        api.post("/v2/queues/q/messages", json={"messages": [{"body": 1, "ttl": 600}]}).status_code
        == 201
    )


def test_request_size_is_capped_by_max_messages_post_size(api: ApiClient) -> None:
    make_queue(api, "small", _max_messages_post_size=1024)
    big = {"messages": [{"body": "x" * 1100}]}
    assert api.post("/v2/queues/small/messages", json=big).status_code == 400
    assert (
        api.post("/v2/queues/small/messages", json={"messages": [{"body": "ok"}]}).status_code
        == 201
    )
    huge = {"messages": [{"body": "x" * 270_000}]}
    assert api.post("/v2/queues/other/messages", json=huge).status_code == 400


def test_message_json_has_the_extension_fields(api: ApiClient) -> None:
    make_queue(api, "q")
    r = api.post(
        "/v2/queues/q/messages",
        json={
            "messages": [
                {
                    "body": {"k": "v"},
                    "ttl": 600,
                    "attributes": {"tenant": {"type": "String", "value": "a"}},
                }
            ]
        },
    )
    href = r.json()["resources"][0]
    m = api.get(href).json()
    assert m["href"] == href
    assert m["ttl"] == 600 and m["age"] == 0 and m["body"] == {"k": "v"}
    assert m["attributes"] == {"tenant": {"type": "String", "value": "a"}}
    assert m["claim_count"] == 0
    assert m["enqueued_at"].endswith("Z") and "T" in m["enqueued_at"]
    assert "provenance" not in m and "history" not in m


def test_list_pages_with_marker_and_hides_own_messages_unless_echo(api: ApiClient) -> None:
    make_queue(api, "q")
    post(api, "q", *range(5))
    assert api.get("/v2/queues/q/messages").json()["messages"] == []
    others = {"Client-ID": OTHER_CLIENT}
    page = api.get("/v2/queues/q/messages?limit=2", headers=others).json()
    bodies = [m["body"] for m in page["messages"]]
    while page["messages"]:
        page = api.get(page["links"][0]["href"], headers=others).json()
        bodies += [m["body"] for m in page["messages"]]
    assert bodies == [0, 1, 2, 3, 4]
    echoed = api.get("/v2/queues/q/messages?echo=true&limit=20").json()["messages"]
    assert len(echoed) == 5
    assert api.get("/v2/queues/q/messages?limit=21").status_code == 400


def test_list_includes_claimed_and_delayed_only_when_asked(api: ApiClient) -> None:
    make_queue(api, "q")
    post(api, "q", "now")
    post(api, "q", "later", delay=30)
    claim(api, "q", limit=1)
    base = "/v2/queues/q/messages?echo=true"
    assert api.get(base).json()["messages"] == []
    assert [m["body"] for m in api.get(base + "&include_claimed=true").json()["messages"]] == [
        "now"
    ]
    both = api.get(base + "&include_claimed=true&include_delayed=true").json()["messages"]
    assert [m["body"] for m in both] == ["now", "later"]


def test_listing_a_missing_queue_is_empty(api: ApiClient) -> None:
    r = api.get("/v2/queues/ghost/messages")
    assert r.status_code == 200 and r.json()["messages"] == []


def test_get_by_ids_and_get_one(api: ApiClient) -> None:
    make_queue(api, "q")
    ids = post(api, "q", "a", "b", "c")
    got = api.get(f"/v2/queues/q/messages?ids={ids[0]},{ids[2]}").json()["messages"]
    assert [m["body"] for m in got] == ["a", "c"]
    assert api.get("/v2/queues/q/messages/nope").status_code == 404
    assert api.get("/v2/queues/q/messages?ids=nope").status_code == 404
    many = ",".join(["x"] * 21)
    assert api.get(f"/v2/queues/q/messages?ids={many}").status_code == 400


def test_delete_by_ids_accepts_an_encoded_comma(api: ApiClient) -> None:
    make_queue(api, "q")
    ids = post(api, "q", "a", "b", "c")
    assert api.delete(f"/v2/queues/q/messages?ids={ids[0]}%2C{ids[1]}").status_code == 204
    left = api.get("/v2/queues/q/messages?echo=true").json()["messages"]
    assert [m["id"] for m in left] == [ids[2]]
    assert api.delete("/v2/queues/q/messages").status_code == 400


def test_pop_takes_and_deletes(api: ApiClient) -> None:
    make_queue(api, "q")
    post(api, "q", 1, 2, 3)
    r = api.delete("/v2/queues/q/messages?pop=2")
    assert r.status_code == 200
    assert [m["body"] for m in r.json()["messages"]] == [1, 2]
    assert api.get("/v2/queues/q/stats").json()["messages"]["total"] == 1
    assert api.delete("/v2/queues/q/messages?pop=21").status_code == 400
    assert api.delete("/v2/queues/q/messages?pop=0").status_code == 400


def test_deleting_a_claimed_message_needs_its_live_claim(
    api: ApiClient, clock: ManualClock
) -> None:
    make_queue(api, "q")
    (mid,) = post(api, "q", "job")
    cid, _ = claim(api, "q", ttl=60)
    href = f"/v2/queues/q/messages/{mid}"
    assert api.delete(href).status_code == 403
    assert api.delete(href + "?claim_id=00000000-0000-4000-8000-000000000000").status_code == 400
    assert api.get(href).json()["body"] == "job"  # neither refusal deleted it
    clock.advance(61)
    # the claim expired: its id no longer deletes
    assert api.delete(f"{href}?claim_id={cid}").status_code == 400
    assert api.get(href).json()["body"] == "job"
    cid2, _ = claim(api, "q", ttl=60)
    assert api.delete(f"{href}?claim_id={cid2}").status_code == 204
    assert api.get(href).status_code == 404
    assert api.delete(href).status_code == 204


def test_claim_create_get_renew_and_release(api: ApiClient, clock: ManualClock) -> None:
    make_queue(api, "q")
    post(api, "q", *range(12))
    r = api.post("/v2/queues/q/claims", json={})
    assert r.status_code == 201
    cid = r.headers["Location"].rsplit("/", 1)[1]
    assert r.headers["Location"] == f"/v2/queues/q/claims/{cid}"
    messages = r.json()["messages"]
    assert len(messages) == 10
    assert messages[0]["href"].endswith(f"?claim_id={cid}")
    got = api.get(f"/v2/queues/q/claims/{cid}").json()
    assert got["ttl"] == 300 and got["grace"] == 60 and len(got["messages"]) == 10
    clock.advance(200)
    assert api.patch(f"/v2/queues/q/claims/{cid}", json={"ttl": 400}).status_code == 204
    clock.advance(200)
    assert api.get(f"/v2/queues/q/claims/{cid}").json()["ttl"] == 400
    assert api.delete(f"/v2/queues/q/claims/{cid}").status_code == 204
    assert api.get(f"/v2/queues/q/claims/{cid}").status_code == 404
    assert api.get("/v2/queues/q/stats").json()["messages"]["free"] == 12
    assert api.delete(f"/v2/queues/q/claims/{cid}").status_code == 204


@pytest.mark.parametrize(
    ("query", "body"),
    [
        ("?limit=0", {}),
        ("?limit=21", {}),
        ("", {"ttl": 59}),
        ("", {"ttl": 43201}),
        ("", {"grace": 10}),
    ],
)
def test_invalid_claims_are_400(api: ApiClient, query: str, body: dict[str, int]) -> None:
    make_queue(api, "q")
    post(api, "q", 1)
    assert api.post(f"/v2/queues/q/claims{query}", json=body).status_code == 400


def test_claiming_an_empty_queue_is_204(api: ApiClient) -> None:
    make_queue(api, "q")
    assert api.post("/v2/queues/q/claims", json={}).status_code == 204


def test_claimed_messages_are_not_claimed_again_until_the_claim_expires(
    api: ApiClient, clock: ManualClock
) -> None:
    make_queue(api, "q")
    post(api, "q", 1)
    first, _ = claim(api, "q", ttl=60)
    assert claim(api, "q") == (None, [])
    clock.advance(61)
    second, messages = claim(api, "q")
    assert second is not None and second != first
    assert messages[0]["claim_count"] == 2


def test_bodies_that_are_not_json_come_back_as_text(api: ApiClient, engine: Engine) -> None:
    make_queue(api, "q")
    engine.send("123456789012", "q", messages=[NewMessage(body=b"plain text")])
    got = api.get("/v2/queues/q/messages?echo=true").json()["messages"]
    assert got[0]["body"] == "plain text"
    assert json.loads(json.dumps(got[0]))["body"] == "plain text"


def test_python_requests_clients_get_zaqars_own_message_fields(api: ApiClient) -> None:
    # python-zaqarclient builds Message(**json) and breaks on any field Zaqar does not send.
    make_queue(api, "q")
    (mid,) = post(api, "q", "x")
    href = f"/v2/queues/q/messages/{mid}"
    plain = api.get(href, headers={"User-Agent": "python-requests/2.32.3"}).json()
    assert set(plain) == {"id", "href", "ttl", "age", "body", "claim_count"}
    forced = api.get(
        href,
        headers={"User-Agent": "python-requests/2.32.3", "X-Deadletter-Format": "extended"},
    ).json()
    assert "enqueued_at" in forced
    assert "enqueued_at" not in api.get(href, headers={"X-Deadletter-Format": "zaqar"}).json()
    assert "enqueued_at" in api.get(href).json()


def test_echo_knows_a_client_however_it_spells_its_id(api: ApiClient) -> None:
    make_queue(api, "q")
    post(api, "q", 1)
    dashless = {"Client-ID": CLIENT_ID.replace("-", "").upper()}
    assert api.get("/v2/queues/q/messages", headers=dashless).json()["messages"] == []
