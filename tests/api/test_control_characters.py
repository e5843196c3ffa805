"""Every name is checked whole: a control character anywhere in a queue, tag, template,
project or SQS name is refused on every route of both faces, before anything is written.

A pattern written `^...$` and tried with `re.match` took a name ending in a newline: `PUT
/v2/queues/nl%0A` stored the queue and the answer then failed on its `Location` header. The
routes are walked from the Zaqar route table and the SQS action table; each is fed every
control character (C0, DEL, C1's NEL, and the line and paragraph separators), at the end of
a name (the hole `$` left) and, drawn by hypothesis, anywhere else in it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deadletter.api.app import build_app
from deadletter.api.sqs import wire
from deadletter.api.sqs.parameters import PARAMETERS
from deadletter.api.zaqar.context import PATH_NAMES
from deadletter.api.zaqar.routes import ROUTES
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import CLIENT_ID, PATCH_TYPE, ApiClient
from tests.support.clients import in_process
from tests.support.sqs_fuzz import query_fields

CONTROLS = [chr(c) for c in range(0x20)] + ["\x7f", "\x85", "\u2028", "\u2029"]
PROJECT = "default"
ACCOUNT = "123456789012"
UUID = "0b0e7a53-87a1-4a3c-9d3e-0d1b4f6a9c11"
BASE = "http://testserver"
VALID = {"queue": "orders", "template": "tmpl", "tag": "audit", "name": "timeouts"}
OTHERS = {
    "message_id": UUID,
    "claim_id": UUID,
    "task_id": UUID,
    "subscription_id": UUID,
    "pattern_id": "p-1",
}
# A body each creating route takes, so that only the name is wrong.
BODIES: dict[tuple[str, str], Any] = {
    ("PUT", "/v2/queues/{queue}"): {},
    ("POST", "/v2/queues/{queue}/messages"): {"messages": [{"body": 1}]},
    ("PUT", "/v2/templates/{template}"): {"pattern": "t*"},
    ("PUT", "/v2/queues/{queue}/tags/{tag}"): {},
    ("POST", "/v2/queues/{queue}/subscriptions"): {"subscriber": "http://example.com/hook"},
    ("POST", "/v2/queues/{queue}/claims"): {},
    ("POST", "/v2/queues/{queue}/redrives"): {},
    ("PUT", "/v2/queues/{queue}/patterns"): {"patterns": []},
    ("PUT", "/v2/queues/{queue}/dead_letters/filters/{name}"): {"error_class": "KeyError"},
}
NAMED = [
    pytest.param(r.method, r.path, key, id=f"{r.method} {r.path} {key}")
    for r in ROUTES
    for key in re.findall(r"\{(\w+)\}", r.path)
    if key in VALID
]


@pytest.fixture
def http(engine: Engine) -> Iterator[ApiClient]:
    with in_process(build_app(engine), base_url=BASE, headers={"Client-ID": CLIENT_ID}) as client:
        yield client


def written(engine: Engine) -> Any:
    projects = (PROJECT, ACCOUNT)
    return (
        [(p, q.name, q.settings) for p in projects for q in engine.list_queues(p, limit=1000)],
        [t.name for t in engine.templates.all(PROJECT)],
    )


def zaqar(http: ApiClient, method: str, path: str, key: str, name: str) -> httpx.Response:
    where = {**VALID, **OTHERS, key: name}
    url = re.sub(r"\{(\w+)\}", lambda m: quote(where[m.group(1)], safe=""), path)
    body = BODIES.get((method, path))
    if method == "PATCH" and path == "/v2/queues/{queue}":
        ops = [{"op": "add", "path": "/metadata/k", "value": 1}]
        return http.request(method, url, json=ops, headers={"Content-Type": PATCH_TYPE})
    return http.request(method, url, **({} if body is None else {"json": body}))


@pytest.mark.parametrize(("method", "path", "key"), NAMED)
def test_every_zaqar_route_refuses_a_name_ending_in_a_control_character(
    http: ApiClient, engine: Engine, method: str, path: str, key: str
) -> None:
    # Given the valid names exist (a template, a queue with a tag)
    http.put("/v2/queues/orders", json={})
    http.put("/v2/queues/orders/tags/audit", json={})
    http.put("/v2/templates/tmpl", json={"pattern": "t*"})
    before = written(engine)
    for char in CONTROLS:
        name = VALID[key] + char
        r = zaqar(http, method, path, key, name)
        assert r.status_code == 400, (repr(char), r.status_code, r.text)
        # NUL has its own words, the same for every value of every route (PostgreSQL text).
        words = "may not contain NUL" if char == "\x00" else f"is not a {PATH_NAMES[key].what}"
        assert words in r.json()["description"], r.text
    assert written(engine) == before


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    route=st.sampled_from([p.values for p in NAMED]),
    head=st.from_regex(r"[a-z0-9_-]{0,20}", fullmatch=True),
    tail=st.from_regex(r"[a-z0-9_-]{0,20}", fullmatch=True),
    char=st.sampled_from(CONTROLS),
)
def test_a_control_character_anywhere_in_a_name_is_refused(
    http: ApiClient, engine: Engine, route: Any, head: str, tail: str, char: str
) -> None:
    method, path, key = route
    before = written(engine)
    r = zaqar(http, method, path, key, head + char + tail)
    assert r.status_code == 400, (repr(head + char + tail), r.status_code, r.text)
    assert written(engine) == before


def test_a_project_with_a_control_character_is_refused(http: ApiClient, engine: Engine) -> None:
    reached = 0
    for char in CONTROLS:
        try:
            r = http.put("/v2/queues/orders", json={}, headers={"X-Project-ID": "p" + char})
        except (httpx.LocalProtocolError, ValueError, UnicodeEncodeError):
            continue  # a header httpx will not send cannot reach the app either
        reached += 1
        assert r.status_code == 400, (repr(char), r.text)
    assert reached > 0
    assert written(engine) == ([], [])


# The SQS face ----------------------------------------------------------------------------


def sqs(
    http: ApiClient, protocol: str, action: str, params: dict[str, Any], path: str = "/"
) -> Any:
    if protocol == "json":
        headers = {"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": wire.JSON_CONTENT_TYPE}
        return http.post(path, content=json.dumps(params).encode(), headers=headers)
    return http.post(
        path,
        content=str(httpx.QueryParams(query_fields(action, params))).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )


URL_ACTIONS = sorted(a for a, known in PARAMETERS.items() if "QueueUrl" in known)


@pytest.mark.parametrize("protocol", ["json", "query"])
def test_every_sqs_name_refuses_a_control_character(
    http: ApiClient, engine: Engine, protocol: str
) -> None:
    sqs(http, protocol, "CreateQueue", {"QueueName": "work"})
    before = written(engine)
    for char in CONTROLS:
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("CreateQueue", {"QueueName": "q" + char}, "/"),
            ("CreateQueue", {"QueueName": "q" + char + ".fifo"}, "/"),
            ("GetQueueUrl", {"QueueName": "work" + char}, "/"),
            ("AddPermission", {"QueueUrl": f"{BASE}/{ACCOUNT}/work", "Label": "l" + char,
                               "AWSAccountIds": [ACCOUNT], "Actions": ["SendMessage"]}, "/"),
            ("CreateQueue", {"QueueName": "fresh"}, f"/{quote(ACCOUNT + char)}/fresh"),
            ("CreateQueue", {"QueueName": "fresh"}, f"/us-east-1{quote(char)}/{ACCOUNT}/fresh"),
            ("SendMessage", {"QueueUrl": f"{BASE}/{ACCOUNT}/work:tag{char}",
                             "MessageBody": "x"}, "/"),
        ]  # fmt: skip
        cases += [
            (action, {"QueueUrl": f"{BASE}/{ACCOUNT}/work{char}"}, "/") for action in URL_ACTIONS
        ]
        for action, params, path in cases:
            r = sqs(http, protocol, action, params, path)
            assert r.status_code == 400, (action, repr(char), r.status_code, r.text)
    assert written(engine) == before
    assert engine.stats(ACCOUNT, "work").total == 0
