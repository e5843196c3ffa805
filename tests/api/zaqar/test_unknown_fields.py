"""Every Zaqar route refuses what it does not read: a query parameter, a body field, a reserved
(`_`) metadata key, a field of a nested object. Each is a 400 naming it (with the known name
it is closest to), answered before anything is written. The cases are built from the route
table, so a route added tomorrow is covered the day it is added."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from deadletter.api.app import AppOptions, build_app
from deadletter.api.auth import ADMIN_ROUTES
from deadletter.api.openapi import document
from deadletter.api.zaqar.reads import FREE
from deadletter.api.zaqar.routes import ROUTES
from deadletter.auth.credentials import MasterKey
from deadletter.engine.credentials import Authority
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import PATCH_TYPE, ApiClient, claim, make_queue, post, with_dlq
from tests.support.clients import in_process

PROJECT = "default"
UUID = "0b0e7a53-87a1-4a3c-9d3e-0d1b4f6a9c11"
VALUES = {
    "queue": "orders",
    "message_id": UUID,
    "claim_id": UUID,
    "task_id": UUID,
    "pattern_id": "p-1",
    "template": "tmpl",
    "subscription_id": UUID,
    "tag": "audit",
    "name": "timeouts",
}
# The body of each route whose handler checks its top level itself (`reads.FREE`), with one
# unknown name in it: that name.
FREE_BODIES: dict[str, tuple[Any, str]] = {
    "create_queue": ({"owner": "team-a", "_bogus_key": 1}, "_bogus_key"),
    "patch_queue": ([{"op": "add", "path": "/metadata/_bogus_key", "value": 1}], "_bogus_key"),
    "put_template": ({"pattern": "b*", "bogus_field": 1}, "bogus_field"),
    "patch_template": ({"pattern": "b*", "bogus_field": 1}, "bogus_field"),
    "edit_dead_letter": ({"body": {"n": 2}, "bogus_field": 1}, "bogus_field"),
}
# The Content-Type of each route that takes its own.
CONTENT_TYPES = {"patch_queue": PATCH_TYPE, "edit_dead_letter": "application/merge-patch+json"}


def url(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: VALUES[m.group(1)], path)


def state(engine: Engine) -> Any:
    """What a request could have written: queues and settings, messages, templates, tags."""
    queues = engine.list_queues(PROJECT, limit=1000)
    return (
        [(q.name, q.settings) for q in queues],
        {q.name: engine.stats(PROJECT, q.name) for q in queues},
        engine.templates.all(PROJECT),
    )


@pytest.fixture
def given(api: ApiClient, engine: Engine) -> Engine:
    """Given a source `orders` with a DLQ and a message, a template, a consumer tag."""
    with_dlq(api)
    post(api, "orders", {"n": 1})
    assert api.put("/v2/templates/tmpl", json={"pattern": "t*"}).status_code == 201
    assert api.put("/v2/queues/orders/tags/audit", json={}).status_code == 201
    return engine


def refused(r: Any, name: str) -> None:
    assert r.status_code == 400, (r.status_code, r.text)
    assert f'"{name}"' in r.json()["description"], r.text


ROUTE_CASES = [pytest.param(r.method, r.path, r.name, id=f"{r.method} {r.path}") for r in ROUTES]


@pytest.mark.parametrize(("method", "path", "name"), ROUTE_CASES)
def test_every_route_refuses_an_unknown_query_parameter(
    api: ApiClient, given: Engine, counted: list[str], method: str, path: str, name: str
) -> None:
    before = state(given)
    counted.clear()
    r = api.request(method, url(path), params={"bogus_param": "1"})
    refused(r, "bogus_param")
    # Refused before the handler runs: not a transaction opened, let alone a write.
    assert counted == []
    assert state(given) == before


BODY_CASES = [
    pytest.param(r.method, r.path, r.name, id=f"{r.method} {r.path}")
    for r in ROUTES
    # A GET's body means nothing in HTTP (python-zaqarclient sends one: context.check_reads).
    if not (r.method == "GET" and r.reads.body is None)
]


@pytest.mark.parametrize(("method", "path", "name"), BODY_CASES)
def test_every_route_refuses_an_unknown_body_field(
    api: ApiClient, given: Engine, method: str, path: str, name: str
) -> None:
    body, unknown = FREE_BODIES.get(name, ({"bogus_field": 1}, "bogus_field"))
    headers = {"Content-Type": CONTENT_TYPES[name]} if name in CONTENT_TYPES else {}
    before = state(given)
    r = api.request(method, url(path), json=body, headers=headers)
    refused(r, unknown)
    assert state(given) == before


def test_every_route_whose_handler_checks_its_body_has_a_case() -> None:
    free = {r.name for r in ROUTES if r.reads.body is FREE}
    assert free == set(FREE_BODIES)


# A typo one away from a documented call: each refused, naming the field it meant.
@pytest.mark.parametrize(
    ("method", "path", "body", "unknown", "meant"),
    [
        ("POST", "/v2/queues/orders-dlq/redrives", {"error_klass": "KeyError"}, "error_klass",
         "error_class"),
        ("POST", "/v2/queues/orders-dlq/redrives", {"sources_queue": "orders"}, "sources_queue",
         "source_queue"),
        ("POST", f"/v2/queues/orders/messages/{UUID}/release?claim_id={UUID}",
         {"delay_seconds": 30}, "delay_seconds", "delay"),
        ("POST", f"/v2/queues/orders/messages/{UUID}/dead_letter?claim_id={UUID}",
         {"description": "InvalidPayload", "bogus": 1}, "bogus", None),
        ("GET", "/v2/queues/orders-dlq/dead_letters?error_klass=KeyError", None, "error_klass",
         "error_class"),
        ("GET", "/v2/queues/orders-dlq/dead_letters?sources_queue=orders", None, "sources_queue",
         "source_queue"),
        ("PUT", "/v2/queues/q2", {"_dead_letter_queue_message_ttl": 60},
         "_dead_letter_queue_message_ttl", "_dead_letter_queue_messages_ttl"),
        ("PUT", "/v2/queues/q2", {"_dead_letter_on_expiration": True},
         "_dead_letter_on_expiration", "_dead_letter_on_expiry"),
        ("PUT", "/v2/queues/q2", {"_max_claims": 3}, "_max_claims", "_max_claim_count"),
        ("PUT", "/v2/queues/orders/tags/t2", {"max_claim": 5}, "max_claim", "max_claims"),
        ("POST", "/v2/queues/orders/messages", {"messages": [{"body": 1, "tll": 60}]}, "tll",
         "ttl"),
        ("POST", "/v2/queues/new/messages",
         {"messages": [{"body": 1, "attributes": {"a": {"type": "String", "valeu": "x"}}}]},
         "valeu", "value"),
        ("POST", "/v2/queues/orders/claims", {"ttl": 60, "graec": 60}, "graec", "grace"),
        ("POST", "/v2/queues/orders/claims",
         {"acknowledge": {"claim_id": UUID, "ids": [UUID], "all": True}}, "all", None),
        ("POST", "/v2/queues/orders/dead_letter",
         {"messages": [{"id": UUID, "claim_id": UUID, "reason": "x"}]}, "reason", None),
        ("POST", f"/v2/queues/orders/messages/{UUID}/dead_letter?claim_id={UUID}",
         {"error": {"class": "KeyError", "mesage": "m"}}, "mesage", "message"),
        ("PUT", "/v2/queues/q2", {"_redrive_allow": {"permission": "allowAll", "source": []}},
         "source", "sources"),
        ("PUT", "/v2/queues/orders/tags/t2",
         {"filter": {"attribute": "a", "value": "b", "op": "eq"}}, "op", None),
    ],
)  # fmt: skip
def test_a_typo_is_refused_by_name(
    api: ApiClient,
    given: Engine,
    method: str,
    path: str,
    body: Any,
    unknown: str,
    meant: str | None,
) -> None:
    before = state(given)
    r = api.request(method, path, **({} if body is None else {"json": body}))
    refused(r, unknown)
    if meant is not None:
        assert f'did you mean "{meant}"?' in r.json()["description"], r.text
    assert state(given) == before


def test_a_patch_operation_with_an_unknown_field_is_refused(api: ApiClient, given: Engine) -> None:
    before = state(given)
    ops = [{"op": "add", "path": "/metadata/_max_claim_count", "value": 5, "form": "x"}]
    r = api.patch("/v2/queues/orders", json=ops, headers={"Content-Type": PATCH_TYPE})
    refused(r, "form")
    assert 'did you mean "from"' not in r.text
    assert state(given) == before


def test_user_metadata_stays_free(api: ApiClient) -> None:
    # Given a queue whose metadata holds the user's own keys
    make_queue(api, "free", owner="team-a", retries={"max": 3}, maxClaims=9)
    # I expect them back as they were
    got = api.get("/v2/queues/free").json()
    assert (got["owner"], got["retries"], got["maxClaims"]) == ("team-a", {"max": 3}, 9)


def test_documented_calls_still_work(api: ApiClient) -> None:
    """The calls docs/api.md shows, with every parameter they name, are taken."""
    with_dlq(api, n=1)
    post(api, "orders", {"n": 1})
    claim_id, messages = claim(api, "orders", limit=1, ttl=60, grace=60)
    assert claim_id is not None
    mid = messages[0]["href"].split("?")[0].rsplit("/", 1)[1]
    r = api.post(
        f"/v2/queues/orders/messages/{mid}/release?claim_id={claim_id}",
        json={"delay": 30, "requeue": True},
    )
    assert r.status_code == 204, r.text
    r = api.get(
        "/v2/queues/orders-dlq/dead_letters",
        params={"source_queue": "orders", "reason": "rejected", "limit": 5, "marker": 0},
    )
    assert r.status_code == 200, r.text
    r = api.get(
        "/v2/queues/orders/messages",
        params={"echo": "true", "include_claimed": "true", "include_delayed": "true", "limit": 5},
    )
    assert r.status_code == 200, r.text
    r = api.get("/v2/queues", params={"detailed": "true", "with_count": "true", "limit": 5})
    assert r.status_code == 200, r.text


@pytest.fixture
def admin_api(engine: Engine) -> Iterator[ApiClient]:
    """The app with credentials on, so that its admin routes exist."""
    authority = Authority(engine, MasterKey.generate())
    with in_process(build_app(engine, AppOptions(authority=authority))) as client:
        yield client


@pytest.mark.parametrize(
    ("path", "method", "name"),
    [pytest.param(p, m, h.__name__, id=f"{m} {p}") for p, m, h in ADMIN_ROUTES],
)
def test_every_admin_route_refuses_an_unknown_name(
    admin_api: ApiClient, engine: Engine, path: str, method: str, name: str
) -> None:
    where = url(path.replace("{key_id}", "AKIDEADLETTER0000000"))
    refused(admin_api.request(method, where, params={"bogus_param": "1"}), "bogus_param")
    if method != "GET":
        refused(admin_api.request(method, where, json={"bogus_field": 1}), "bogus_field")
    assert engine.list_queues(PROJECT, limit=10) == []


def test_the_openapi_document_says_what_each_route_reads() -> None:
    """Each body's schema lists exactly the fields the route reads and takes no other; each
    route's query parameters are the ones it reads."""
    doc = document()
    schemas = doc["components"]["schemas"]
    for r in ROUTES:
        op = doc["paths"][r.path][r.method.lower()]
        reads = r.reads
        query = [p["name"] for p in op["parameters"] if p["in"] == "query"]
        assert query == list(reads.query), r.name
        if reads.body is None or reads.body is FREE:
            continue
        ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        schema = schemas[ref.rsplit("/", 1)[1]]
        assert set(schema["properties"]) == set(reads.body), r.name
        assert schema["additionalProperties"] is False, r.name
