"""Zaqar v2 basics over HTTP: versions, headers, queues, metadata, stats and purge."""

from __future__ import annotations

from typing import Any

import pytest

from deadletter.api.zaqar import metadata as meta_module
from deadletter.api.zaqar.routes import ROUTES
from deadletter.domain.provenance import Reason
from deadletter.domain.redrive import SkipReason, TaskStatus
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import PATCH_TYPE, ApiClient, make_queue, post


def test_root_lists_versions_with_300(api: ApiClient) -> None:
    r = api.get("/")
    assert r.status_code == 300
    assert r.json()["versions"][0]["id"] == "2"


def test_home_ping_and_health_need_no_client_id(api: ApiClient) -> None:
    bare = {"Client-ID": ""}
    home = api.get("/v2", headers=bare)
    assert home.status_code == 200
    assert "rel/dead_letters" in home.json()["resources"]
    assert api.get("/v2/ping", headers=bare).status_code == 204
    assert api.head("/v2/ping", headers=bare).status_code == 204
    health = api.get("/v2/health", headers=bare)
    assert health.status_code == 200 and health.json()["storage_reachable"] is True


def test_client_id_is_required_and_must_be_a_uuid(api: ApiClient) -> None:
    missing = api.get("/v2/queues", headers={"Client-ID": ""})
    assert missing.status_code == 400
    assert "Client-ID" in missing.json()["description"]
    assert api.get("/v2/queues", headers={"Client-ID": "not-a-uuid"}).status_code == 400
    dashless = api.get("/v2/queues", headers={"Client-ID": "3f8b0a0e0d474f3e9b597f0c1e6a2a11"})
    assert dashless.status_code == 200


def test_form_encoded_body_is_refused(api: ApiClient) -> None:
    r = api.put(
        "/v2/queues/q",
        content=b"a=1",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 400
    assert set(r.json()) == {"title", "description"}


def test_projects_are_isolated_and_default_to_the_default_project(
    api: ApiClient, engine: Engine
) -> None:
    make_queue(api, "shared")
    (mid,) = post(api, "shared", "mine")
    other = {"X-Project-ID": "other"}
    assert api.get("/v2/queues/shared", headers=other).status_code == 404
    assert api.get("/v2/queues/shared", headers={"X-Project-ID": "123456789012"}).status_code == 200
    # Nothing another project does reaches the queue or its message:
    assert api.get("/v2/queues", headers=other).json()["queues"] == []
    assert api.get(f"/v2/queues/shared/messages/{mid}", headers=other).status_code == 404
    assert api.post("/v2/queues/shared/claims", headers=other, json={}).status_code == 204
    assert api.delete(f"/v2/queues/shared/messages/{mid}", headers=other).status_code == 204
    assert api.post("/v2/queues/shared/purge", headers=other, json={}).status_code == 404
    assert api.delete("/v2/queues/shared", headers=other).status_code == 204
    # its post made a queue of its own, of the same name, beside ours.
    sent = api.post("/v2/queues/shared/messages", headers=other, json={"messages": [{"body": 2}]})
    assert sent.status_code == 201
    assert [m.body for m in engine.claim("other", "shared", limit=10).messages] == [b"2"]
    assert engine.stats("123456789012", "shared").total == 1
    assert [m.id for m in engine.claim("123456789012", "shared", limit=10).messages] == [mid]


def test_put_creates_then_answers_204_without_changing_metadata(api: ApiClient) -> None:
    assert api.put("/v2/queues/q1", json={"color": "red"}).status_code == 201
    assert api.put("/v2/queues/q1", json={"color": "blue"}).status_code == 204
    assert api.get("/v2/queues/q1").json()["color"] == "red"


@pytest.mark.parametrize("name", ["bad name", "x" * 65, "plus+sign", "é"])
def test_invalid_queue_names_are_refused(api: ApiClient, name: str) -> None:
    assert api.put(f"/v2/queues/{name}", json={}).status_code == 400


def test_metadata_larger_than_64_kib_is_refused(api: ApiClient) -> None:
    assert api.put("/v2/queues/big", json={"k": "x" * 70_000}).status_code == 400


def test_get_returns_the_reserved_keys_zaqar_fills_in_and_no_other_unset_one(
    api: ApiClient,
) -> None:
    # Zaqar's GET adds only these three to what was set; a key shown as null would make
    # python-zaqarclient's metadata(new_meta=...) add it and then remove it.
    make_queue(api, "q", owner="team-a")
    assert api.get("/v2/queues/q").json() == {
        "owner": "team-a",
        "_default_message_ttl": 3600,
        "_max_messages_post_size": 262144,
        "_default_message_delay": 0,
    }


def test_get_with_defaults_shows_every_reserved_key(api: ApiClient) -> None:
    # What the CLI's `queue show` asks for: each setting, its default where unset.
    make_queue(api, "q", owner="team-a")
    meta = api.get("/v2/queues/q", params={"defaults": "true"}).json()
    assert set(meta) == {"owner"} | meta_module.RESERVED
    assert meta["_default_claim_ttl"] == 300 and meta["_max_message_ttl"] == 1_209_600
    assert meta["_dead_letter_eligible"] is True and meta["_max_claim_count"] is None


def test_get_of_a_missing_queue_is_404(api: ApiClient) -> None:
    r = api.get("/v2/queues/nope")
    assert r.status_code == 404
    assert r.json()["title"] == "Queue not found"


def test_dlq_policy_round_trips_through_metadata(api: ApiClient) -> None:
    make_queue(api, "dlq")
    make_queue(
        api,
        "src",
        _max_claim_count=5,
        _dead_letter_queue="dlq",
        _dead_letter_queue_messages_ttl=7200,
        _dead_letter_on_expiry=True,
    )
    meta = api.get("/v2/queues/src").json()
    assert meta["_max_claim_count"] == 5
    assert meta["_dead_letter_queue"] == "dlq"
    assert meta["_dead_letter_queue_messages_ttl"] == 7200
    assert meta["_dead_letter_on_expiry"] is True
    assert meta["_dead_letter_policy_active"] is True


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        ({"_max_claim_count": 0, "_dead_letter_queue": "dlq"}, "_max_claim_count"),
        ({"_max_claim_count": 1001, "_dead_letter_queue": "dlq"}, "_max_claim_count"),
        ({"_max_claim_count": "3", "_dead_letter_queue": "dlq"}, "_max_claim_count"),
        ({"_max_claim_count": 3}, "together"),
        ({"_dead_letter_queue": "dlq"}, "together"),
        ({"_max_claim_count": 3, "_dead_letter_queue": "missing"}, "does not exist"),
        ({"_max_claim_count": 3, "_dead_letter_queue": "src"}, "own dead-letter queue"),
        (
            {
                "_max_claim_count": 3,
                "_dead_letter_queue": "dlq",
                "_dead_letter_queue_messages_ttl": 10,
            },
            "dead-letter message TTL",
        ),
        ({"_dead_letter_queue_messages_ttl": 600}, "needs"),
        ({"_default_message_ttl": 30}, "_default_message_ttl"),
        ({"_default_message_delay": 901}, "_default_message_delay"),
        ({"_max_messages_post_size": 300_000}, "_max_messages_post_size"),
        ({"_default_claim_ttl": 43201}, "_default_claim_ttl"),
        ({"_dead_letter_eligible": "yes"}, "_dead_letter_eligible"),
        ({"_redrive_allow": {"permission": "some"}}, "_redrive_allow"),
        ({"_redrive_allow": {"permission": "byQueue", "sources": []}}, "byQueue"),
        ({"_enable_encrypt_messages": True}, "encryption"),
    ],
)
def test_reserved_metadata_is_validated_with_a_clear_description(
    api: ApiClient, metadata: dict[str, object], words: str
) -> None:
    make_queue(api, "dlq")
    r = api.put("/v2/queues/src", json=metadata)
    assert r.status_code == 400, r.text
    assert words in r.json()["description"]
    assert api.get("/v2/queues/src").status_code == 404


def test_dead_letter_chains_are_refused(api: ApiClient) -> None:
    # Given a -> dlq
    make_queue(api, "dlq")
    make_queue(api, "a", _max_claim_count=2, _dead_letter_queue="dlq")
    # a DLQ cannot get a policy of its own,
    make_queue(api, "other")
    r = api.put("/v2/queues/b", json={"_max_claim_count": 2, "_dead_letter_queue": "a"})
    assert r.status_code == 400 and "no chains" in r.json()["description"]
    patch = api.patch(
        "/v2/queues/dlq",
        json=[
            {"op": "add", "path": "/metadata/_max_claim_count", "value": 2},
            {"op": "add", "path": "/metadata/_dead_letter_queue", "value": "other"},
        ],
        headers={"Content-Type": PATCH_TYPE},
    )
    assert patch.status_code == 400 and "no chains" in patch.json()["description"]


def test_patch_needs_the_json_patch_content_type(api: ApiClient) -> None:
    make_queue(api, "q")
    r = api.patch("/v2/queues/q", json=[{"op": "add", "path": "/metadata/a", "value": 1}])
    assert r.status_code == 415


def test_patch_adds_replaces_and_removes_keys(api: ApiClient) -> None:
    make_queue(api, "dlq")
    make_queue(api, "q", color="red")
    r = api.patch(
        "/v2/queues/q",
        json=[
            {"op": "replace", "path": "/metadata/color", "value": "blue"},
            {"op": "add", "path": "/metadata/size", "value": 3},
            {"op": "add", "path": "/metadata/_max_claim_count", "value": 4},
            {"op": "add", "path": "/metadata/_dead_letter_queue", "value": "dlq"},
            {"op": "replace", "path": "/metadata/_default_message_ttl", "value": 120},
        ],
        headers={"Content-Type": PATCH_TYPE},
    )
    assert r.status_code == 200, r.text
    meta = api.get("/v2/queues/q").json()
    assert (meta["color"], meta["size"], meta["_max_claim_count"]) == ("blue", 3, 4)
    assert meta["_default_message_ttl"] == 120
    removed = api.patch(
        "/v2/queues/q",
        json=[
            {"op": "remove", "path": "/metadata/color"},
            {"op": "remove", "path": "/metadata/_max_claim_count"},
            {"op": "remove", "path": "/metadata/_dead_letter_queue"},
            {"op": "remove", "path": "/metadata/_default_message_ttl"},
        ],
        headers={"Content-Type": PATCH_TYPE},
    )
    assert removed.status_code == 200, removed.text
    meta = api.get("/v2/queues/q").json()
    assert "color" not in meta
    assert "_dead_letter_queue" not in meta and meta["_default_message_ttl"] == 3600


@pytest.mark.parametrize("op", ["replace", "remove"])
def test_patch_of_a_missing_key_is_409(api: ApiClient, op: str) -> None:
    make_queue(api, "q")
    r = api.patch(
        "/v2/queues/q",
        json=[{"op": op, "path": "/metadata/nothing", "value": 1}],
        headers={"Content-Type": PATCH_TYPE},
    )
    assert r.status_code == 409


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "move", "path": "/metadata/a"}],
        [{"op": "add", "path": "/a", "value": 1}],
        [{"op": "add", "path": "/metadata/a"}],
        [{"op": "add", "path": "/metadata/_dead_letter_policy_active", "value": True}],
        {"op": "add"},
        [],
    ],
)
def test_invalid_patch_operations_are_400(api: ApiClient, ops: object) -> None:
    make_queue(api, "q")
    r = api.patch("/v2/queues/q", json=ops, headers={"Content-Type": PATCH_TYPE})
    assert r.status_code == 400


def test_list_queues_pages_with_next_links_detail_and_count(api: ApiClient) -> None:
    for i in range(5):
        make_queue(api, f"q{i}", n=i)
    first = api.get("/v2/queues?limit=2&detailed=true&with_count=true").json()
    assert [q["name"] for q in first["queues"]] == ["q0", "q1"]
    assert first["queues"][1]["metadata"]["n"] == 1
    assert first["count"] == 5
    names = [q["name"] for q in first["queues"]]
    href = first["links"][0]["href"]
    while True:
        page = api.get(href).json()
        if not page["queues"]:
            break
        names += [q["name"] for q in page["queues"]]
        assert "metadata" in page["queues"][0]
        href = page["links"][0]["href"]
    assert names == [f"q{i}" for i in range(5)]
    assert api.get("/v2/queues?limit=21").status_code == 400


def test_delete_queue(api: ApiClient, engine: Engine) -> None:
    make_queue(api, "q")
    post(api, "q", "gone with it")
    assert api.delete("/v2/queues/q").status_code == 204
    assert api.get("/v2/queues/q").status_code == 404
    assert engine.find_queue("123456789012", "q") is None
    assert api.delete("/v2/queues/q").status_code == 204
    # A queue made again under the name starts empty: the messages went with the queue.
    make_queue(api, "q")
    assert api.get("/v2/queues/q/stats").json()["messages"]["total"] == 0


def test_stats_count_messages_and_purge_empties_the_queue(api: ApiClient) -> None:
    make_queue(api, "q")
    post(api, "q", 1, 2, 3)
    post(api, "q", 4, delay=60)
    api.post("/v2/queues/q/claims?limit=1", json={})
    stats = api.get("/v2/queues/q/stats").json()
    assert stats["messages"]["free"] == 2
    assert stats["messages"]["claimed"] == 1
    assert stats["messages"]["delayed"] == 1
    assert stats["messages"]["total"] == 4
    assert stats["messages"]["oldest"]["href"].startswith("/v2/queues/q/messages/")
    assert stats["dead_letter"]["policy_active"] is None
    assert api.post("/v2/queues/q/purge", json={"resource_types": ["messages"]}).status_code == 204
    assert api.get("/v2/queues/q/stats").json()["messages"]["total"] == 0
    assert api.post("/v2/queues/q/purge", json={"resource_types": ["bogus"]}).status_code == 400
    assert api.get("/v2/queues/missing/stats").status_code == 404


def test_openapi_document_describes_every_route(api: ApiClient) -> None:
    doc = api.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    paths = doc["paths"]
    for r in ROUTES:
        assert paths[r.path][r.method.lower()]["operationId"] == r.handler.__name__
    assert "post" in paths["/v2/queues/{queue}/messages/{message_id}/dead_letter"]


def _enums_named(doc: Any, key: str) -> list[list[Any]]:
    """Every `enum` under a property or parameter named `key`, anywhere in `doc`."""
    found: list[list[Any]] = []
    if isinstance(doc, dict):
        if doc.get("name") == key and "enum" in doc.get("schema", {}):  # a parameter
            found.append(doc["schema"]["enum"])
        for k, v in doc.items():
            if k == key and isinstance(v, dict) and "enum" in v:  # a property
                found.append(v["enum"])
            found += _enums_named(v, key)
    elif isinstance(doc, list):
        for v in doc:
            found += _enums_named(v, key)
    return found


def test_the_openapi_documents_enums_are_the_domains(api: ApiClient) -> None:
    doc = api.get("/openapi.json").json()
    # Why a message died, wherever a reason is; why a redrive left one where it is (its
    # skipped messages') is the other set of reasons. A null is a reason not given.
    reasons = [[v for v in found if v is not None] for found in _enums_named(doc, "reason")]
    deaths, skips = [r.value for r in Reason], [s.value for s in SkipReason]
    assert all(found in (deaths, skips) for found in reasons), reasons
    assert reasons.count(deaths) >= 3
    assert "maxlen" in deaths
    statuses = _enums_named(doc, "status")
    assert statuses and all(found == [s.value for s in TaskStatus] for found in statuses)


def test_metrics_count_requests_and_engine_events(api: ApiClient) -> None:
    make_queue(api, "q")
    post(api, "q", 1, 2)
    text = api.get("/metrics").text
    assert 'deadletter_messages_sent_total{project="123456789012",queue="q"} 2.0' in text
    assert 'route="/v2/queues/{queue}/messages"' in text


def test_an_unexpected_failure_is_a_zaqar_500_and_health_says_503(
    api: ApiClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(engine, "list_queues", broken)
    r = api.get("/v2/queues")
    assert r.status_code == 500
    assert r.json()["title"] == "Internal server error"
    assert "disk on fire" not in r.text
    assert api.get("/v2/health").status_code == 503


def test_a_queue_made_with_sqs_defaults_can_be_patched(api: ApiClient, engine: Engine) -> None:
    # SQS's default visibility timeout (30 s) is below Zaqar's minimum claim TTL.
    engine.create_queue("123456789012", "from-sqs")
    r = api.patch(
        "/v2/queues/from-sqs",
        json=[{"op": "add", "path": "/metadata/team", "value": "a"}],
        headers={"Content-Type": PATCH_TYPE},
    )
    assert r.status_code == 200, r.text
    assert r.json()["_default_claim_ttl"] == 30 and r.json()["team"] == "a"
