"""The message routes run on the event loop (`deadletter.api.threads.on_loop`): on SQLite their
engine work runs on the loop's own thread, requests that are ready together share one commit,
no answer leaves before its commit, and events are told after it even when the caller has
gone. Every other route still runs in a worker thread."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from deadletter.api.app import build_app
from deadletter.api.notify import Notifier
from deadletter.api.threads import on_loop
from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from deadletter.storage.base import Transaction
from deadletter.storage.sqlite.backend import SQLiteStore

CLIENT = {"Client-ID": "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"}
SQS = "AmazonSQS."
Q = "/v2/queues/loop"


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    store = SQLiteStore(tmp_path / "loop.db")
    yield Engine(store)
    store.close()


def _threads_of_writes(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(request, thread) of every write transaction from now on; `request` is set by
    the caller in `CURRENT`."""
    seen: list[tuple[str, str]] = []
    original = engine.store.transaction

    def transaction() -> AbstractContextManager[Transaction]:
        if threading.current_thread().name != "deadletter-worker":  # the background sweeps
            seen.append((CURRENT[0], threading.current_thread().name))
        return original()

    monkeypatch.setattr(engine.store, "transaction", transaction)
    return seen


CURRENT = [""]


def _sqs(action: str, **params: Any) -> dict[str, Any]:
    return {"headers": {"X-Amz-Target": SQS + action}, "content": json.dumps(params)}


def test_message_routes_write_on_the_loop_and_the_others_in_a_worker_thread(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = build_app(sqlite_engine)
    seen = _threads_of_writes(sqlite_engine, monkeypatch)

    async def requests() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:

            async def call(name: str, method: str, url: str, **kw: Any) -> httpx.Response:
                CURRENT[0] = name
                answer = await c.request(method, url, **kw)
                assert answer.status_code < 300, (name, answer.text)
                return answer

            await call("zaqar create", "PUT", Q, headers=CLIENT, json={})
            body = {"messages": [{"body": i, "ttl": 60} for i in range(4)]}
            await call("zaqar send", "POST", Q + "/messages", headers=CLIENT, json=body)
            claim = await call(
                "zaqar claim", "POST", Q + "/claims?limit=2", headers=CLIENT, json={"ttl": 60}
            )
            ids = [m["id"] for m in claim.json()["messages"]]
            claim_id = claim.json()["messages"][0]["href"].split("claim_id=")[1]
            await call(
                "zaqar delete",
                "DELETE",
                f"{Q}/messages?ids={','.join(ids)}&claim_ids={claim_id}",
                headers=CLIENT,
            )
            await call("zaqar purge", "POST", Q + "/purge", headers=CLIENT, json={})
            url = (
                await call("sqs create", "POST", "/", **_sqs("CreateQueue", QueueName="s"))
            ).json()["QueueUrl"]
            await call(
                "sqs send", "POST", "/", **_sqs("SendMessage", QueueUrl=url, MessageBody="x")
            )
            got = await call("sqs receive", "POST", "/", **_sqs("ReceiveMessage", QueueUrl=url))
            handle = got.json()["Messages"][0]["ReceiptHandle"]
            await call(
                "sqs delete",
                "POST",
                "/",
                **_sqs("DeleteMessage", QueueUrl=url, ReceiptHandle=handle),
            )
            await call("sqs purge", "POST", "/", **_sqs("PurgeQueue", QueueUrl=url))

    asyncio.run(requests())
    loop_thread = threading.main_thread().name
    on_the_loop = {name for name, thread in seen if thread == loop_thread}
    assert on_the_loop == {
        "zaqar send",
        "zaqar claim",
        "zaqar delete",
        "sqs send",
        "sqs receive",
        "sqs delete",
    }
    elsewhere = {name for name, thread in seen if thread != loop_thread}
    assert elsewhere == {"zaqar create", "zaqar purge", "sqs create", "sqs purge"}


def test_sends_ready_together_share_one_commit_and_each_answer_follows_it(
    sqlite_engine: Engine,
) -> None:
    store = sqlite_engine.store
    assert isinstance(store, SQLiteStore)
    sqlite_engine.create_queue("p", "loop")
    events: list[str] = []
    store._conn.set_trace_callback(lambda sql: events.append(sql) if sql == "COMMIT" else None)
    app = build_app(sqlite_engine)
    senders = 8

    async def sends() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:

            async def send(i: int) -> int:
                body = {"messages": [{"body": i, "ttl": 60}]}
                headers = {**CLIENT, "X-Project-ID": "p"}
                answer = await c.post(Q + "/messages", headers=headers, json=body)
                events.append(f"answer {answer.status_code}")
                return answer.status_code

            return list(await asyncio.gather(*(send(i) for i in range(senders))))

    assert asyncio.run(sends()) == [201] * senders
    # One commit for the eight, before every answer
    assert events == ["COMMIT"] + ["answer 201"] * senders


def test_events_are_told_after_the_commit_even_when_the_caller_has_gone(
    sqlite_engine: Engine,
) -> None:
    told: list[tuple[str, int]] = []

    class Listener(EngineListener):
        def sent(self, project: str, queue: str, count: int) -> None:
            told.append((queue, count))

    sqlite_engine.add_listener(Listener())
    sqlite_engine.create_queue("p", "loop")

    async def gone() -> None:
        task = asyncio.create_task(
            on_loop(sqlite_engine, sqlite_engine.send, "p", "loop", messages=[NewMessage(b"x")])
        )
        await asyncio.sleep(0)  # the send has run and waits for its commit
        assert told == []
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(5):  # the commit, then its news, each a turn of the loop
            await asyncio.sleep(0)

    asyncio.run(gone())
    assert told == [("loop", 1)]
    assert sqlite_engine.stats("p", "loop").total == 1


def test_a_receive_that_finds_messages_waits_in_no_line(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_line: list[str] = []
    original: Callable[..., Any] = Notifier.competing

    @asynccontextmanager
    async def competing(self: Notifier, project: str, queue: str, tag: str | None) -> Any:
        in_line.append(queue)
        async with original(self, project, queue, tag) as turn:
            yield turn

    monkeypatch.setattr(Notifier, "competing", competing)
    app = build_app(sqlite_engine)

    async def receives() -> tuple[int, int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            url = (await c.post("/", **_sqs("CreateQueue", QueueName="w"))).json()["QueueUrl"]
            await c.post("/", **_sqs("SendMessage", QueueUrl=url, MessageBody="x"))
            found = await c.post("/", **_sqs("ReceiveMessage", QueueUrl=url, WaitTimeSeconds=20))
            empty = await c.post("/", **_sqs("ReceiveMessage", QueueUrl=url, WaitTimeSeconds=1))
            return len(found.json()["Messages"]), len(empty.json().get("Messages", []))

    assert asyncio.run(receives()) == (1, 0)
    assert in_line == ["w"]  # the empty receive only


def test_an_empty_receive_claims_once_before_it_waits_and_once_when_the_wait_ends(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    claims: list[str] = []
    original = sqlite_engine.claim

    def claim(*args: Any, **kwargs: Any) -> Any:
        claims.append(args[1])
        return original(*args, **kwargs)

    monkeypatch.setattr(sqlite_engine, "claim", claim)
    app = build_app(sqlite_engine)

    async def receive() -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            url = (await c.post("/", **_sqs("CreateQueue", QueueName="e"))).json()["QueueUrl"]
            empty = await c.post("/", **_sqs("ReceiveMessage", QueueUrl=url, WaitTimeSeconds=1))
            return len(empty.json().get("Messages", []))

    assert asyncio.run(receive()) == 0
    assert claims == ["e", "e"]


def test_a_message_announced_between_the_empty_claim_and_the_wait_is_claimed_without_a_wait(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    original: Callable[..., Any] = Notifier.competing
    waits: list[str] = []  # a receive asks when the next message shows before each wait
    next_visible_in = sqlite_engine.next_visible_in

    def asked(project: str, queue: str) -> float | None:
        waits.append(queue)
        return next_visible_in(project, queue)

    monkeypatch.setattr(sqlite_engine, "next_visible_in", asked)

    @asynccontextmanager
    async def sent_first(self: Notifier, project: str, queue: str, tag: str | None) -> Any:
        # a send that commits and is announced after the receive looked, before it waits in line
        await on_loop(
            sqlite_engine, sqlite_engine.send, project, queue, messages=[NewMessage(b"late")]
        )
        async with original(self, project, queue, tag) as turn:
            yield turn

    monkeypatch.setattr(Notifier, "competing", sent_first)
    app = build_app(sqlite_engine)

    async def receive() -> list[str]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            url = (await c.post("/", **_sqs("CreateQueue", QueueName="l"))).json()["QueueUrl"]
            got = await c.post("/", **_sqs("ReceiveMessage", QueueUrl=url, WaitTimeSeconds=20))
            return [m["Body"] for m in got.json().get("Messages", [])]

    assert asyncio.run(receive()) == ["late"]
    assert waits == []
