"""A store that cannot be reached is an answer on every route of both faces: 503 with
`Retry-After` in Zaqar's `{"title","description"}`, ServiceUnavailable on SQS in both
protocols, never a 500; the log says it once, without a traceback. The routes and actions
come from the faces' own lists, so a new one is covered the day it is added."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio.from_thread
import httpx
import pytest

from deadletter.api.app import build_app
from deadletter.api.options import AppOptions
from deadletter.api.sqs.actions import ASYNC_ACTIONS, SYNC_ACTIONS
from deadletter.api.zaqar.routes import ROUTES
from deadletter.auth.credentials import MasterKey
from deadletter.domain.errors import StoreUnavailable
from deadletter.engine.credentials import Authority
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Transaction
from tests.api.zaqar.conftest import PATCH_TYPE, ApiClient, api

__all__ = ["api"]

ACCOUNT = "123456789012"
QUEUE_URL = f"http://testserver/{ACCOUNT}/q"
JSON_TYPE = "application/x-amz-json-1.0"
PLACEHOLDER = re.compile(r"\{(\w+)\}")
# Values for a route's path parameters that the face accepts as well-formed.
PATH_VALUES = {"queue": "q", "tag": "t", "template": "tpl"}
# A well-formed body per route where the face reads one, so that the request gets as far as
# the store; routes not listed get `{}`.
BODIES: dict[tuple[str, str], object] = {
    ("/v2/queues/{queue}/messages", "POST"): {"messages": [{"body": "b"}]},
    ("/v2/queues/{queue}/claims", "POST"): {"ttl": 60},
}
# What must reach the store (and so answer 503) with the inputs above.
REACHES_THE_STORE = {
    ("/v2/queues", "GET"),
    ("/v2/queues/{queue}", "PUT"),
    ("/v2/queues/{queue}", "GET"),
    ("/v2/queues/{queue}/stats", "GET"),
    ("/v2/queues/{queue}/messages", "POST"),
    ("/v2/queues/{queue}/messages", "GET"),
    ("/v2/queues/{queue}/claims", "POST"),
    ("/v2/health", "GET"),
}
SQS_PARAMS: dict[str, dict[str, object]] = {
    "CreateQueue": {"QueueName": "q"},
    "GetQueueUrl": {"QueueName": "q"},
    "SendMessage": {"QueueUrl": QUEUE_URL, "MessageBody": "b"},
    "ReceiveMessage": {"QueueUrl": QUEUE_URL},
    "ListQueues": {},
}


@contextmanager
def unreachable(engine: Engine) -> Iterator[None]:
    """Every transaction of the engine's store fails as a lost database would."""
    store = engine.store

    @contextmanager
    def gone() -> Iterator[Transaction]:
        raise StoreUnavailable("the database cannot be reached") from ConnectionResetError(
            "connection reset by peer"
        )
        yield  # pragma: no cover

    saved = store._transaction, store._read  # type: ignore[attr-defined]
    store._transaction, store._read = gone, gone  # type: ignore[method-assign]
    try:
        yield
    finally:
        store._transaction, store._read = saved  # type: ignore[method-assign]


def zaqar_request(api: ApiClient, template: str, method: str) -> tuple[int, object, dict[str, str]]:
    path = PLACEHOLDER.sub(lambda m: PATH_VALUES.get(m.group(1), str(uuid.uuid4())), template)
    kwargs: dict[str, object] = {}
    if method in ("POST", "PUT", "PATCH"):
        kwargs["json"] = BODIES.get((template, method), {})
    if method == "PATCH":
        kwargs["headers"] = {"Content-Type": PATCH_TYPE}
        kwargs["json"] = [{"op": "add", "path": "/metadata/a", "value": 1}]
    if "claim_id" not in template and method == "DELETE" and "messages/{" in template:
        path += f"?claim_id={uuid.uuid4()}"
    r = api.request(method, path, **kwargs)  # type: ignore[arg-type]
    body = (
        r.json()
        if r.content and r.headers.get("content-type", "").startswith("application/json")
        else None
    )
    return r.status_code, body, dict(r.headers)


def test_every_zaqar_route_answers_503_with_retry_after_and_never_500(
    api: ApiClient, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a queue, and then a store that cannot be reached,
    assert api.put("/v2/queues/q", json={}).status_code == 201
    answers = {}
    with caplog.at_level(logging.INFO), unreachable(engine):
        # when every route of the face is called,
        for r in ROUTES:
            answers[(r.path, r.method)] = zaqar_request(api, r.path, r.method)
    # then none answers 500, every 503 is the face's own with Retry-After,
    assert not [k for k, (status, _, _) in answers.items() if status >= 500 and status != 503]
    for key, (status, body, headers) in answers.items():
        if status == 503:
            assert headers.get("retry-after") == "5", key
            if key != ("/v2/health", "GET"):
                assert body == {
                    "title": "Service unavailable",
                    "description": "The store is unavailable: the database cannot be reached."
                    " Try again in 5 seconds.",
                }, key
    # the routes that reach the store all answered 503,
    assert {k for k, (status, _, _) in answers.items() if status == 503} >= REACHES_THE_STORE
    health = answers[("/v2/health", "GET")][1]
    assert isinstance(health, dict) and health["status"] == "unavailable"
    assert health["reason"] == "the database cannot be reached"
    # and the log holds one line for it all, and no traceback.
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    went = [r for r in caplog.records if r.getMessage().startswith("store unavailable")]
    assert len(went) == 1


@pytest.mark.parametrize("protocol", ["json", "query"])
def test_every_sqs_action_answers_service_unavailable_and_never_500(
    api: ApiClient, engine: Engine, caplog: pytest.LogCaptureFixture, protocol: str
) -> None:
    assert api.put("/v2/queues/q", json={}).status_code == 201
    answers = {}
    with caplog.at_level(logging.INFO), unreachable(engine):
        for action in [*SYNC_ACTIONS, *ASYNC_ACTIONS]:
            params = SQS_PARAMS.get(action, {"QueueUrl": QUEUE_URL})
            if protocol == "json":
                r = api.post(
                    "/",
                    json=params,
                    headers={"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": JSON_TYPE},
                )
                code = r.headers.get("x-amzn-query-error", "").split(";")[0]
            else:
                r = api.post("/", data={"Action": action, **params})  # type: ignore[dict-item]
                found = re.search(r"<Code>([^<]+)</Code>", r.text)
                code = found.group(1) if found else ""
            answers[action] = (r.status_code, code)
    assert not [a for a, (status, _) in answers.items() if status >= 500 and status != 503]
    assert all(code == "ServiceUnavailable" for status, code in answers.values() if status == 503)
    assert {a for a, (status, _) in answers.items() if status == 503} >= set(SQS_PARAMS)
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def test_with_credentials_required_an_outage_is_503_on_the_console_feed_and_the_api(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a server that looks credentials up in its store,
    store = open_store(f"sqlite:///{tmp_path / 'gated.db'}")
    engine = Engine(store)
    authority = Authority(engine, MasterKey.generate())
    admin, secret = authority.create(ACCOUNT, "admin")
    headers = {"X-Auth-Token": f"{admin.key_id}:{secret}", "Client-ID": str(uuid.uuid4())}
    transport = httpx.ASGITransport(app=build_app(engine, AppOptions(authority=authority)))
    try:
        with anyio.from_thread.start_blocking_portal() as portal:
            client = httpx.AsyncClient(
                transport=transport, base_url="http://testserver", headers=headers
            )
            api = ApiClient(portal, client)
            assert api.get("/v2/queues").status_code == 200
            # when the store goes away, the console's live feed and the API answer 503.
            with caplog.at_level(logging.INFO), unreachable(engine):
                for path in ("/console/events", "/v2/queues"):
                    r = api.get(path)
                    assert r.status_code == 503, (path, r.text)
                    assert r.headers["Retry-After"] == "5"
            portal.call(client.aclose)
    finally:
        store.close()
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
