"""The Zaqar face's route table and what is built from it agree, row by row: the router, the
role each request needs, the hot path and the OpenAPI document.

Every case is generated from `ROUTES` (and the SQS face's `OPERATIONS`), so a row added
tomorrow is checked by each test below the day it is added.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Match, Route

from deadletter.api.app import AppOptions, build_app
from deadletter.api.auth import ADMIN_ROUTES
from deadletter.api.hot import HotRoute
from deadletter.api.openapi import document
from deadletter.api.sqs.actions import OPERATIONS
from deadletter.api.sqs.permissions import OWNER_ONLY, SHARED
from deadletter.api.sqs.routes import HOT_PATHS, PATHS, QueryGet
from deadletter.api.zaqar.queues import queue_stats
from deadletter.api.zaqar.routes import ROUTES, ZaqarRoute, zaqar_routes
from deadletter.auth.credentials import MasterKey
from deadletter.auth.roles import Action, Role, allowed
from deadletter.engine.credentials import Authority
from deadletter.engine.engine import Engine
from tests.support.routes import BY_TEMPLATE, zaqar_action

pytestmark = pytest.mark.one_store

CLIENT_ID = "3381af92-2b9e-11e3-b191-71861300734c"
# A value for each path parameter a row may have: one that passes the name checks.
SAMPLES = {
    "queue": "q1",
    "message_id": "m1",
    "claim_id": "c1",
    "task_id": "t1",
    "pattern_id": "p-1",
    "template": "t-1",
    "subscription_id": "s1",
    "tag": "t1",
    "name": "f1",
    "account": "123456789012",
    "region": "us-east-1",
}
ROW_IDS = [f"{r.method} {r.path}" for r in ROUTES]
# The public rows: Zaqar's own, with no credential at all.
PUBLIC = {("GET", "/"), ("GET", "/v2"), ("GET", "/v2/"), ("GET", "/v2/ping")}


def concrete(template: str) -> str:
    """`template` with each parameter filled in; a new parameter fails here until it has a
    sample, so no row is skipped."""
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: SAMPLES[m.group(1)], template)


def methods_of(row: ZaqarRoute) -> list[str]:
    """The methods a row answers: HEAD with every GET (it needs what GET needs)."""
    return [row.method, "HEAD"] if row.method == "GET" else [row.method]


@pytest.fixture
def apps(engine: Engine) -> list[Starlette]:
    """The app in every shape it is served in: auth on (with the admin routes), test mode,
    and plain."""
    authority = Authority(engine, MasterKey.generate())
    options = [AppOptions(authority=authority), AppOptions(test_mode=True), AppOptions()]
    return [build_app(engine, o) for o in options]


def chosen(app: Starlette, method: str, path: str) -> Route:
    """The route the router gives a request: the first of its table that takes it whole."""
    scope = {"type": "http", "method": method, "path": path, "root_path": ""}
    route = next(r for r in app.routes if r.matches(scope)[0] is Match.FULL)
    assert isinstance(route, Route)
    return route


@pytest.mark.parametrize("row", ROUTES, ids=ROW_IDS)
def test_each_row_is_the_route_the_router_chooses(apps: list[Starlette], row: ZaqarRoute) -> None:
    for app in apps:
        for method in methods_of(row):
            route = chosen(app, method, concrete(row.path))
            assert route.path == row.path, method
            assert method in (route.methods or ())
            # and it is answered ahead of the router exactly when its row says it is hot
            assert isinstance(route, HotRoute) is row.hot


def test_every_zaqar_route_of_the_app_is_a_row(apps: list[Starlette]) -> None:
    admin = {(m, p) for p, m, _ in ADMIN_ROUTES}
    for app in apps:
        for route in app.routes:
            if not isinstance(route, Route) or isinstance(route, QueryGet):
                continue  # the WebSocket transport; SQS's query protocol over GET
            if "{rest" in route.path or not (route.path.startswith("/v2") or route.path == "/"):
                continue  # the /v2 fallback (404 or 405); the SQS face, the console, ...
            for method in (route.methods or set()) - {"HEAD"}:
                if (method, route.path) in admin or (method, route.path) == ("POST", "/"):
                    continue  # the admin API's own table; SQS's `POST /`
                assert (method, route.path) in BY_TEMPLATE, (method, route.path)


def test_the_rows_are_unique_and_every_handler_names_one_row() -> None:
    assert len(BY_TEMPLATE) == len(ROUTES)
    names = [r.name for r in ROUTES if r.handler.__name__ != "home"]  # `/v2` and `/v2/`
    assert len(names) == len(set(names))


@pytest.mark.parametrize("row", ROUTES, ids=ROW_IDS)
def test_each_row_is_documented_with_its_summary(row: ZaqarRoute) -> None:
    doc = document()
    op = doc["paths"][row.path][row.method.lower()]
    assert (op["operationId"], op["summary"]) == (row.name, row.summary)
    assert {row.status, *row.also, *row.errors} <= set(op["responses"])
    if row.body is None:
        assert "requestBody" not in op
    else:
        ref = next(iter(op["requestBody"]["content"].values()))["schema"]["$ref"]
        assert ref == f"#/components/schemas/{row.body}"
        assert row.body in doc["components"]["schemas"]


def test_the_document_has_no_operation_that_is_not_a_row() -> None:
    documented = {
        (method.upper(), path)
        for path, ops in document()["paths"].items()
        for method in ops
        if path not in ("/metrics", "/openapi.json")
    }
    assert documented == set(BY_TEMPLATE)


def test_every_row_but_the_public_ones_needs_an_action() -> None:
    assert {(r.method, r.path) for r in ROUTES if r.action is None} == PUBLIC
    for row in ROUTES:
        for method in methods_of(row):
            for params in [{}, *({name: "1"} for name in row.when)]:
                assert zaqar_action(method, row.path, params) is row.action_for(params)


@pytest.fixture
def authed(engine: Engine) -> Iterator[tuple[Starlette, dict[Role, str]]]:
    authority = Authority(engine, MasterKey.generate())
    tokens = {}
    for role in Role:
        credential, secret = authority.create("alpha", role)
        tokens[role] = f"{credential.key_id}:{secret}"
    yield build_app(engine, AppOptions(authority=authority)), tokens


def call(app: Starlette, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.request(method, path, headers={"Client-ID": CLIENT_ID, **headers})

    return anyio.run(go)


@pytest.mark.parametrize("row", ROUTES, ids=ROW_IDS)
def test_each_row_is_guarded_by_its_action(
    authed: tuple[Starlette, dict[Role, str]], row: ZaqarRoute
) -> None:
    # Given an app with auth on, and a credential of each role
    app, tokens = authed
    for method in methods_of(row):
        path = concrete(row.path)
        # When it is asked without a credential, I expect 401 unless the row is public
        anonymous = call(app, method, path, {})
        assert (anonymous.status_code == 401) is (row.action is not None), method
        if row.action is None:
            continue
        # and with each role's, 403 exactly where the role table refuses the row's action,
        # for each query parameter that changes it
        for params in [{}, *({name: "1"} for name in row.when)]:
            query = "".join(f"?{k}={v}" for k, v in params.items())
            action = row.action_for(params)
            assert action is not None
            for role, token in tokens.items():
                answer = call(app, method, path + query, {"X-Auth-Token": token})
                # A handler's own 403 (a claim only its holder may use) is not the role's.
                refused = answer.status_code == 403 and (
                    method == "HEAD" or answer.json()["title"] == "Forbidden"
                )
                may = allowed(role, action)
                assert refused is not may, (method, params, role.value, answer.text[:200])


def test_a_new_row_is_routed_guarded_and_documented(engine: Engine) -> None:
    # Given the table with one row more: a route that reads a queue's stats
    new = ZaqarRoute(
        "GET",
        "/v2/queues/{queue}/example",
        queue_stats,
        action=Action.QUEUE_STATS,
        summary="An example",
    )
    table = [*ROUTES, new]
    authority = Authority(engine, MasterKey.generate())
    app = Starlette(routes=zaqar_routes(engine, AppOptions(authority=authority), table))
    reader, reader_secret = authority.create("alpha", Role.READER)
    producer, producer_secret = authority.create("alpha", Role.PRODUCER)
    reader_token = f"{reader.key_id}:{reader_secret}"
    producer_token = f"{producer.key_id}:{producer_secret}"
    # I expect the router to take it, its action to guard it (a reader may read stats, a
    # producer may not), and the document to show it
    path = "/v2/queues/q1/example"
    assert call(app, "GET", path, {"X-Auth-Token": reader_token}).status_code == 404  # no q1
    assert call(app, "GET", path, {"X-Auth-Token": producer_token}).status_code == 403
    assert call(app, "GET", path, {}).status_code == 401
    op = document(table)["paths"]["/v2/queues/{queue}/example"]["get"]
    assert (op["summary"], op["operationId"]) == ("An example", "queue_stats")


def test_every_sqs_action_has_a_permission_and_post_root_is_hot(apps: list[Starlette]) -> None:
    assert all(isinstance(op.permission, Action) for op in OPERATIONS.values())
    for app in apps:
        for path in PATHS:
            route = chosen(app, "POST", concrete(path))
            assert isinstance(route, HotRoute) is (path in HOT_PATHS), path


def test_the_hot_path_is_public_starlette() -> None:
    source = (Path(__file__).parents[2] / "src/deadletter/api/hot.py").read_text()
    assert "starlette._" not in source


def test_every_sqs_action_is_one_a_queue_policy_may_or_may_not_grant() -> None:
    # A policy names an action by its permission's name, which its batch form shares.
    batches = {name for name in OPERATIONS if name.endswith("Batch")}
    assert {name.removesuffix("Batch") for name in batches} <= set(OPERATIONS)
    assert SHARED.isdisjoint(OWNER_ONLY)
    assert (SHARED | OWNER_ONLY) - {"*"} == set(OPERATIONS) - batches


def _segments(path: str) -> list[str]:
    return path.split("/")


def _shadowed() -> list[tuple[ZaqarRoute, str]]:
    """Each row with a parameter, and each static path of another row that its parameter
    would take whole (`.../dead_letters/{message_id}` and `.../dead_letters/archive`)."""
    found = []
    for row in ROUTES:
        mine = _segments(row.path)
        for other in sorted({r.path for r in ROUTES} - {row.path}):  # one order in every worker
            theirs = _segments(other)
            if len(theirs) != len(mine):
                continue
            pairs = list(zip(mine, theirs, strict=True))
            takes = all(a == b or (a[0:1] == "{" and b[0:1] != "{") for a, b in pairs)
            if takes and any(a != b for a, b in pairs):
                found.append((row, other))
    return found


SHADOWED = _shadowed()


@pytest.mark.parametrize(
    ("row", "static"), SHADOWED, ids=[f"{r.method} {r.path} over {s}" for r, s in SHADOWED]
)
def test_a_parameter_does_not_take_a_static_siblings_path(
    apps: list[Starlette], row: ZaqarRoute, static: str
) -> None:
    # Given a static path (.../dead_letters/archive) that a parameter's row could take whole
    # When it is asked with a method only the parameter's row answers
    methods = {m for r in ROUTES if r.path == static for m in methods_of(r)}
    if row.method in methods:
        return  # the static row answers it, first
    answer = call(apps[2], row.method, concrete(static), {})
    # I expect 405 naming the methods of the static path's rows, not the parameter's answer
    assert answer.status_code == 405, answer.text[:200]
    assert set(answer.headers["Allow"].split(", ")) == methods
