"""The classes of attack an adversarial review found, generated so the next member fails too.

Given a server with authentication required, an operator, and an admin, producer, consumer and
reader of project `alpha` (and an admin of `beta`), I expect:

- no spelling of a role (case, whitespace, NUL, full-width or look-alike letters) to mint a
  credential the caller could not mint by the role's own name;
- HEAD to answer as GET (status, headers, no body) on every GET route of the app, for every role;
- a deeply nested JSON body to be refused in the route's own error format, never a 500, on
  every route that takes a body;
- every Zaqar route and admin route to answer 403 exactly when the role table refuses the
  action, and never 401, 403 or 5xx when it allows it.

Every list below is read from the app's own routes, so a route added tomorrow is covered.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import anyio.from_thread
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import Route

from deadletter.api.app import AppOptions, build_app
from deadletter.api.auth import ADMIN_ROUTES
from deadletter.auth.credentials import MasterKey
from deadletter.auth.roles import Action, Role, allowed
from deadletter.engine.credentials import Authority
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient
from tests.support.routes import zaqar_action

CLIENT_ID = "3381af92-2b9e-11e3-b191-71861300734c"
PROJECT = "alpha"


@dataclass
class Server:
    api: ApiClient
    authority: Authority
    app: object
    tokens: dict[str, str] = field(default_factory=dict)  # who -> X-Auth-Token
    ids: dict[str, str] = field(default_factory=dict)  # path parameter -> a real value

    def call(
        self, method: str, path: str, who: str | None, project: str = PROJECT, **kwargs: object
    ) -> httpx.Response:
        headers = {"Client-ID": CLIENT_ID, "X-Project-ID": project}
        if who is not None:
            headers["X-Auth-Token"] = self.tokens[who]
        headers.update(kwargs.pop("headers", {}))  # type: ignore[arg-type]
        return self.api.request(method, path, headers=headers, **kwargs)


# Who calls: a role of `alpha` by its name, the operator, and `beta`'s admin.
PROJECT_ROLES = [Role.ADMIN, Role.PRODUCER, Role.CONSUMER, Role.READER]
CALLERS = [None, "operator", *[r.value for r in PROJECT_ROLES], "beta-admin"]


@pytest.fixture
def server(engine: Engine) -> Iterator[Server]:
    authority = Authority(engine, MasterKey.generate())
    app = build_app(engine, AppOptions(authority=authority))
    transport = httpx.ASGITransport(app=app)
    with anyio.from_thread.start_blocking_portal() as portal:
        client = httpx.AsyncClient(transport=transport, base_url="http://testserver")
        try:
            s = Server(ApiClient(portal, client), authority, app)
            for who, project, role in [
                ("operator", "ops", Role.OPERATOR),
                *[(r.value, PROJECT, r) for r in PROJECT_ROLES],
                ("beta-admin", "beta", Role.ADMIN),
            ]:
                credential, secret = authority.create(project, role)
                s.tokens[who] = f"{credential.key_id}:{secret}"
            _populate(s)
            yield s
        finally:
            portal.call(client.aclose)


def _populate(s: Server) -> None:
    """A queue with a message and a claim, a tag and a template, so GET routes find things."""
    assert s.call("PUT", "/v2/queues/jobs", "admin", json={}).status_code == 201
    sent = s.call("POST", "/v2/queues/jobs/messages", "admin", json={"messages": [{"body": 1}]})
    assert sent.status_code == 201, sent.text
    s.ids["message_id"] = sent.json()["resources"][0].rsplit("/", 1)[1]
    s.call("POST", "/v2/queues/jobs/messages", "admin", json={"messages": [{"body": 2}]})
    claimed = s.call("POST", "/v2/queues/jobs/claims?limit=1", "consumer", json={})
    assert claimed.status_code == 201, claimed.text
    s.ids["claim_id"] = claimed.headers["location"].rsplit("/", 1)[1]
    assert s.call("PUT", "/v2/queues/jobs/tags/t1", "admin", json={}).status_code in (201, 204)
    s.ids.update(
        queue="jobs",
        tag="t1",
        template="nothing-here",
        subscription_id="57692ab13990b48c644bb7e6",
        task_id="00000000-0000-4000-8000-000000000000",
        pattern_id="p-1",
        name="timeouts",
        rest="nowhere",
        account="123456789012",
        region="us-east-1",
    )


def _path(s: Server, template: str) -> str:
    """The route's path with each parameter filled; an unknown parameter fails here, so a
    new route's parameter is added to `_populate` instead of being skipped. A credential's
    route gets a credential of its own (a reader of `alpha`), so rotating or revoking it
    leaves every caller's intact."""
    if "{key_id}" in template:
        s.ids["key_id"] = s.authority.create(PROJECT, Role.READER)[0].key_id
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: s.ids[m.group(1)], template)


def _routes(s: Server, methods: set[str]) -> list[tuple[str, str]]:
    found = []
    for route in s.app.routes:  # type: ignore[attr-defined]
        if isinstance(route, Route) and route.methods:
            found += [(m, route.path) for m in sorted(route.methods & methods)]
    return found


# A stream has no end to compare; its HEAD is its GET's headers, which the stream sends first.
STREAMS = {"/console/events"}
# /metrics counts the GET just made (request latency), so its length moves between the two.
VOLATILE = {"/metrics": {"content-length"}}


def test_head_answers_as_get_on_every_route_for_every_caller(server: Server) -> None:
    gets = [(m, p) for m, p in _routes(server, {"GET"}) if p not in STREAMS]
    assert len(gets) >= 25  # every route, not a sample
    for _, template in gets:
        path = _path(server, template)
        for who in CALLERS:
            got = server.call("GET", path, who)
            head = server.call("HEAD", path, who)
            where = f"HEAD {template} as {who}"
            assert got.status_code < 500, (where, got.text)
            assert head.status_code == got.status_code, where
            assert head.content == b"", where
            # An SQS answer names its own request, whichever method asked.
            volatile = VOLATILE.get(template, set()) | {"x-amzn-requestid"}
            assert {k: v for k, v in head.headers.items() if k not in volatile} == {
                k: v for k, v in got.headers.items() if k not in volatile
            }, where


def test_head_on_ping_is_public_and_empty(server: Server) -> None:
    answer = server.call("HEAD", "/v2/ping", None)
    assert (answer.status_code, answer.content) == (204, b"")


DEEP = [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000]


def test_deep_nesting_is_refused_on_every_route_with_a_body(server: Server) -> None:
    with_body = _routes(server, {"POST", "PUT", "PATCH"})
    assert ("POST", "/v2/auth/tokens") in with_body and ("POST", "/v2/credentials") in with_body
    for method, template in with_body:
        path = _path(server, template)
        zaqar = path.startswith("/v2")
        for who in ["operator", "admin", None]:
            for body in DEEP:
                answer = server.call(
                    method, path, who, content=body, headers={"Content-Type": "application/json"}
                )
                where = f"{method} {template} as {who}"
                assert answer.status_code < 500, (where, answer.text[:300])
                if zaqar and answer.status_code >= 400:
                    assert set(answer.json()) == {"title", "description"}, where


# The action each admin route gates on (tokens need only a key id and its secret).
ADMIN_ACTIONS: dict[tuple[str, str], Action | None] = {
    ("POST", "/v2/auth/tokens"): None,
    ("POST", "/v2/credentials"): Action.CREDENTIALS_MANAGE,
    ("GET", "/v2/credentials"): Action.CREDENTIALS_MANAGE,
    ("GET", "/v2/credentials/{key_id}"): Action.CREDENTIALS_MANAGE,
    ("DELETE", "/v2/credentials/{key_id}"): Action.CREDENTIALS_MANAGE,
    ("POST", "/v2/credentials/{key_id}/rotate"): Action.CREDENTIALS_MANAGE,
    ("POST", "/v2/queues/{queue}/share"): Action.QUEUE_SHARE,
}


def test_every_admin_route_has_its_action() -> None:
    assert {(m, p) for p, m, _ in ADMIN_ROUTES} == set(ADMIN_ACTIONS)


BODIES = {
    "/v2/credentials": {"role": "reader"},
    "/v2/queues/{queue}/share": {"methods": ["GET"]},
}


def test_role_by_route_answers_as_the_role_table_says(server: Server) -> None:
    """Every route of the Zaqar face and the admin API, as every role of `alpha`: 403 exactly
    where the table refuses. Writes run last, so the reads find what `_populate` made."""
    routes = _routes(server, {"GET", "POST", "PUT", "PATCH", "DELETE"})
    order = {"GET": 0, "POST": 1, "PUT": 1, "PATCH": 1, "DELETE": 2}
    checked = 0
    for method, template in sorted(routes, key=lambda r: order[r[0]]):
        if (method, template) in ADMIN_ACTIONS:
            action = ADMIN_ACTIONS[(method, template)]
        elif template.startswith("/v2/") and "{rest" not in template:
            action = zaqar_action(method, template, {})
        else:
            continue
        if action is None:
            continue
        for role in PROJECT_ROLES:
            path = _path(server, template)
            answer = server.call(method, path, role.value, json=BODIES.get(template, {}))
            where = f"{method} {template} as {role.value}: {answer.text[:200]}"
            # A handler's own 403 (a claim only its holder may use) is not the role's refusal.
            refused = answer.status_code == 403 and answer.json()["title"] == "Forbidden"
            if allowed(role, action):
                assert answer.status_code != 401 and not refused, where
                assert answer.status_code < 500, where
            elif "{key_id}" in template:
                assert refused or answer.status_code == 404, where  # 404: not disclosed
            else:
                assert refused, where
            checked += 1
    assert checked > 150


# Spellings of role names: each character in any case, full-width or a look-alike from another
# script, with whitespace, NUL or invisible characters around or inside.
LOOK_ALIKES = {  # Cyrillic, dotless i, long s (upper-cases to S), Kelvin sign (lower: k)
    "a": "\u0430",
    "e": "\u0435",
    "o": "\u043e",
    "p": "\u0440",
    "c": "\u0441",
    "r": "\u0433",
    "i": "\u0131",
    "s": "\u017f",
    "k": "\u212a",
    "d": "\u0501",
}
NOISE = [" ", "\t", "\n", "\r", "\x00", "\u00a0", "\u200b", "\u3000", "\ufeff", "\x0b"]


@st.composite
def spellings(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from([r.value for r in Role]))
    out = []
    for ch in name:
        kind = draw(st.sampled_from(["lower", "upper", "upper", "wide", "alike"]))
        if kind == "upper":
            ch = ch.upper()
        elif kind == "wide":
            ch = chr(ord(draw(st.sampled_from([ch, ch.upper()]))) + 0xFEE0)
        elif kind == "alike":
            ch = LOOK_ALIKES.get(ch, ch)
        out.append(ch)
    if draw(st.booleans()):
        out.insert(draw(st.integers(0, len(out))), draw(st.sampled_from(NOISE)))
    before = draw(st.text(st.sampled_from(NOISE), max_size=2))
    after = draw(st.text(st.sampled_from(NOISE), max_size=2))
    return before + "".join(out) + after


def _named_role(text: str) -> Role | None:
    """The oracle: a role is named only by its ASCII letters, in any case."""
    if re.fullmatch(r"[A-Za-z]+", text) and text.isascii():
        return {r.value: r for r in Role}.get(text.lower())
    return None


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spelling=st.one_of(spellings(), st.sampled_from(["OPERATOR", "Operator", "oPeRaToR"])))
def test_no_spelling_of_a_role_escalates(server: Server, spelling: str) -> None:
    operators = {c.key_id for c in server.authority.list_for(None) if c.role is Role.OPERATOR}
    answer = server.call("POST", "/v2/credentials", "admin", json={"role": spelling})
    named = _named_role(spelling)
    if named is None:
        assert answer.status_code == 400, (spelling, answer.text)
    elif named is Role.OPERATOR:
        assert answer.status_code == 403, (spelling, answer.text)
    else:
        assert answer.status_code == 201, (spelling, answer.text)
        assert answer.json()["role"] == named.value
        stored = server.authority.require(answer.json()["key_id"])
        assert (stored.role, stored.project) == (named, PROJECT)
    after = {c.key_id for c in server.authority.list_for(None) if c.role is Role.OPERATOR}
    assert after == operators, spelling


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"expires": "9999-12-31T00:00:00"}, "at most"),
        ({"methods": ["GET", "FLY"]}, "Unknown method"),
        ({"methods": [" post"]}, "Unknown method"),
        ({"methods": "GET"}, "list of strings"),
    ],
)
def test_a_share_is_refused_with_a_clear_400(server: Server, body: dict, words: str) -> None:
    answer = server.call("POST", "/v2/queues/jobs/share", "admin", json=body)
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["description"]


def _projects_in(text: str) -> set[str]:
    return set(re.findall(r'project="([^"]*)"', text))


def test_metrics_show_an_admin_its_own_project_and_the_operator_all(server: Server) -> None:
    server.call("PUT", "/v2/queues/secret-plans", "beta-admin", project="beta", json={})
    posted = server.call(
        "POST",
        "/v2/queues/secret-plans/messages",
        "beta-admin",
        project="beta",
        json={"messages": [{"body": 1}]},
    )
    assert posted.status_code == 201
    everything = server.call("GET", "/metrics", "operator")
    assert _projects_in(everything.text) == {"alpha", "beta"}
    assert "deadletter_http_request_duration_seconds" in everything.text
    own = server.call("GET", "/metrics", "admin")
    assert own.status_code == 200
    assert _projects_in(own.text) == {"alpha"}
    assert "secret-plans" not in own.text
    # Request latency is every project's traffic together: the operator's only.
    assert "deadletter_http_request_duration_seconds" not in own.text
    for who in ["producer", "consumer", "reader", None]:
        assert server.call("GET", "/metrics", who).status_code in (401, 403), who


def test_nul_in_any_admin_route_input_is_refused_not_a_500(server: Server) -> None:
    """PostgreSQL text cannot hold NUL: every text an admin route passes to the store (path
    parameter, query, body field, key id) is refused before it gets there."""
    for template, method, _ in ADMIN_ROUTES:
        path = re.sub(
            r"\{(\w+)\}", lambda m: "DLAK%00" if m.group(1) == "key_id" else "jobs", template
        )
        for who in ["operator", "admin"]:
            for query in ["", "?project=a%00b"]:
                body = {"role": "admin", "project": "a\x00b", "key_id": "DLAK\x00", "secret": "x"}
                answer = server.call(method, path + query, who, json=body)
                where = f"{method} {template}{query} as {who}: {answer.text[:200]}"
                assert answer.status_code < 500, where
                if answer.status_code >= 400:
                    assert set(answer.json()) == {"title", "description"}, where
                assert "\\u0000" not in answer.text or answer.status_code >= 400, where
    token = server.call("GET", "/v2/queues", None, headers={"X-Auth-Token": "DLAK\x00:x"})
    assert token.status_code == 401


def test_nul_in_a_sigv4_key_id_is_refused_not_a_500(server: Server) -> None:
    query = (
        "Action=ListQueues&X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=DLAK%00%2F20300101%2Fus-east-1%2Fsqs%2Faws4_request"
        "&X-Amz-Date=20300101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=" + "0" * 64
    )
    answer = server.api.request("POST", "/?" + query)
    assert 400 <= answer.status_code < 500, answer.text
