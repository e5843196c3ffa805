"""The message routes of both faces are answered ahead of Starlette's router
(`deadletter.api.hot`), as the router itself would answer them: by the route it would choose,
labelled in the metrics by that route's template."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.routing import Match
from starlette.types import Receive, Scope, Send

from deadletter.api.app import AppOptions, build_app
from deadletter.api.hot import hot_routes
from deadletter.api.sqs.routes import HOT_PATHS
from deadletter.api.zaqar.routes import ROUTES
from deadletter.auth.credentials import load_master_key
from deadletter.engine.credentials import Authority
from deadletter.engine.engine import Engine

CLIENT = {"Client-ID": "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"}
SQS = "AmazonSQS."
# The hot routes, as the faces' tables declare them.
HOT = {(r.method, r.path) for r in ROUTES if r.hot} | {("POST", p) for p in HOT_PATHS}


def every_route_apps(engine: Engine, tmp_path: Path) -> list[Any]:
    """The apps with every route there is: the admin routes (auth on), test mode's."""
    authority = Authority(engine, load_master_key(tmp_path / "k.key", environ={}))
    options = [AppOptions(authority=authority), AppOptions(test_mode=True), AppOptions()]
    return [build_app(engine, o) for o in options]


def test_the_hot_routes_are_those_the_tables_declare(engine: Engine, tmp_path: Path) -> None:
    for app in every_route_apps(engine, tmp_path):
        found = {(m, r.path) for r in hot_routes(app.routes) for m in r.methods or ()}
        assert found == HOT


@pytest.mark.parametrize(("method", "path"), sorted(HOT))
def test_the_router_would_choose_the_same_route(
    engine: Engine, tmp_path: Path, method: str, path: str
) -> None:
    # Given a request for a hot route, with every path parameter filled in
    concrete = re.sub(r"\{[^}]+\}", "x", path)
    scope = {"type": "http", "method": method, "path": concrete, "root_path": ""}
    for app in every_route_apps(engine, tmp_path):
        # I expect the first route of the table that takes it to be that hot route
        chosen = next(r for r in app.routes if r.matches(scope)[0] is Match.FULL)
        assert (method, chosen.path) == (method, path)
        assert chosen in hot_routes(app.routes)


def test_message_requests_never_reach_the_router(engine: Engine) -> None:
    app = build_app(engine)
    routed: list[str] = []
    router = app.router.middleware_stack

    async def spy(scope: Scope, receive: Receive, send: Send) -> None:
        routed.append(f"{scope['method']} {scope['path']}")
        await router(scope, receive, send)

    app.router.middleware_stack = spy
    q = "/v2/queues/hot"

    def sqs(action: str, **params: Any) -> dict[str, Any]:
        return {"headers": {"X-Amz-Target": SQS + action}, "content": json.dumps(params)}

    async def cycle() -> dict[str, int | str]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            seen: dict[str, int | str] = {}
            seen["create"] = (await c.put(q, headers=CLIENT, json={})).status_code
            messages = {"messages": [{"body": i, "ttl": 60} for i in range(3)]}
            posted = await c.post(q + "/messages", headers=CLIENT, json=messages)
            seen["post"] = posted.status_code
            claim = await c.post(q + "/claims?limit=2", headers=CLIENT, json={"ttl": 60})
            seen["claim"] = claim.status_code
            hrefs = [m["href"] for m in claim.json()["messages"]]
            ids = ",".join(h.split("?")[0].rsplit("/", 1)[1] for h in hrefs)
            claim_id = hrefs[0].split("claim_id=")[1]
            gone = await c.delete(f"{q}/messages?ids={ids}&claim_ids={claim_id}", headers=CLIENT)
            seen["delete ids"] = gone.status_code
            popped = await c.delete(q + "/messages?pop=1", headers=CLIENT)
            seen["pop"] = popped.status_code
            seen["delete one"] = (await c.delete(q + "/messages/x", headers=CLIENT)).status_code
            url = (await c.post("/", **sqs("CreateQueue", QueueName="hot"))).json()["QueueUrl"]
            entries = [{"Id": str(i), "MessageBody": "b"} for i in range(2)]
            sent = await c.post("/", **sqs("SendMessageBatch", QueueUrl=url, Entries=entries))
            seen["sqs send"] = len(sent.json()["Successful"])
            got = await c.post("/", **sqs("ReceiveMessage", QueueUrl=url, MaxNumberOfMessages=10))
            handles = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                for i, m in enumerate(got.json()["Messages"])
            ]
            deleted = await c.post("/", **sqs("DeleteMessageBatch", QueueUrl=url, Entries=handles))
            seen["sqs delete"] = len(deleted.json()["Successful"])
            seen["metrics"] = (await c.get("/metrics")).text
            return seen

    seen = anyio.run(cycle)
    metrics = seen.pop("metrics")
    assert seen == {
        "create": 201,
        "post": 201,
        "claim": 201,
        "delete ids": 204,
        "pop": 200,
        "delete one": 204,
        "sqs send": 2,
        "sqs delete": 2,
    }
    # Only the requests that move no messages went through the router.
    assert routed == [f"PUT {q}", "GET /metrics"]
    # The latency of a hot request is labelled with its route's template, as the router's.
    assert isinstance(metrics, str)
    for method, path in HOT:
        assert f'method="{method}",route="{path}",status="2' in metrics, (method, path)


def test_message_requests_pass_the_apps_own_layers_but_not_the_router(engine: Engine) -> None:
    # Given the app with a layer of its own that notes what passes through it, and a spy on
    # its router
    app = build_app(engine)
    passed: list[str] = []
    routed: list[str] = []

    class Spy:
        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            passed.append(f"{scope['method']} {scope['path']}")
            await self.app(scope, receive, send)

    app.add_middleware(Spy)
    router = app.router.middleware_stack

    async def spy(scope: Scope, receive: Receive, send: Send) -> None:
        routed.append(f"{scope['method']} {scope['path']}")
        await router(scope, receive, send)

    app.router.middleware_stack = spy
    q = "/v2/queues/stack"

    async def requests() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            created = await c.put(q, headers=CLIENT, json={})
            posted = await c.post(q + "/messages", headers=CLIENT, json={"messages": [{"body": 1}]})
            sqs = await c.post(
                "/", headers={"X-Amz-Target": SQS + "ListQueues"}, content=json.dumps({})
            )
            return [created.status_code, posted.status_code, sqs.status_code]

    # When a queue is created, then a message posted and an SQS action called
    assert anyio.run(requests) == [201, 201, 200]
    # I expect every request to have passed the app's layers (its body limit and latency
    # metric are written once, there), and only the one that moves no message the router.
    assert passed == [f"PUT {q}", f"POST {q}/messages", "POST /"]
    assert routed == [f"PUT {q}"]


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_a_message_request_over_the_body_limit_is_refused_in_its_face_format(
    engine: Engine, chunked: bool
) -> None:
    from deadletter.api.limits import Limits

    app = build_app(engine, limits=Limits(zaqar_body=100, sqs_body=100))
    big = json.dumps({"messages": [{"body": "x" * 200}]}).encode()

    async def chunks() -> Any:
        yield big[:50]
        yield big[50:]

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            await c.put("/v2/queues/big", headers=CLIENT, json={})
            content = chunks() if chunked else big
            return await c.post("/v2/queues/big/messages", headers=CLIENT, content=content)

    answer = anyio.run(post)
    assert answer.status_code == 413
    assert "100 bytes" in answer.json()["description"]
