"""A server holding a thousand connections opens its next PostgreSQL connections past
descriptor 1,023, which `select.select` refuses: each check of a pooled connection and each
look at a socket's readiness goes through `poll` (`storage/postgres/on_loop.ready_now`)."""

from __future__ import annotations

import asyncio
import socket
import struct
import uuid

import httpx
import pytest
from psycopg.waiting import READY_R, READY_W, WAIT_R, WAIT_W

from deadletter.api.app import build_app
from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.postgres.on_loop import ready_now
from tests.support.descriptors import SELECT_LIMIT, descriptors_taken
from tests.support.polls import eventually

ZAQAR = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": "p"}
BOTH = READY_R | READY_W


@pytest.mark.postgres
@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
def test_a_store_opened_past_descriptor_1023_serves_threads_and_the_loop(store_url: str) -> None:
    # Given a process holding every descriptor below 1,024 when it opens its store
    with descriptors_taken():
        store = open_store(store_url)
        try:
            engine = Engine(store)
            # When a queue is made, sent to and claimed from on this thread
            engine.create_queue("p", "q")
            engine.send("p", "q", messages=[NewMessage(b"a")])
            claimed = engine.claim("p", "q", limit=1, ttl=60)
            # and sent to and claimed from through the app, whose message routes run on
            # the event loop
            answers = asyncio.run(_through_the_app(engine))
        finally:
            store.close()
    # I expect each to work as it does with few descriptors
    assert [m.body for m in claimed.messages] == [b"a"]
    assert answers == (201, 201, [b"b"])


async def _through_the_app(engine: Engine) -> tuple[int, int, list[bytes]]:
    transport = httpx.ASGITransport(app=build_app(engine))
    async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=ZAQAR) as c:
        sent = await c.post("/v2/queues/q/messages", json={"messages": [{"body": "b"}]})
        claim = await c.post("/v2/queues/q/claims", json={"ttl": 60})
        bodies = [m["body"].encode() for m in claim.json()["messages"]]
        return sent.status_code, claim.status_code, bodies


def test_the_readiness_of_a_socket_past_descriptor_1023() -> None:
    with descriptors_taken():
        mine, theirs = socket.socketpair()
        fd = mine.fileno()
        assert fd >= SELECT_LIMIT
        # Nothing to read yet, room to write
        assert ready_now(fd, WAIT_R) == 0
        assert ready_now(fd, WAIT_R | WAIT_W) == READY_W
        # Something to read, then the other end gone: readable either way
        theirs.send(b"x")
        assert ready_now(fd, WAIT_R) == READY_R
        theirs.close()
        mine.recv(1)
        assert ready_now(fd, WAIT_R) == READY_R
        # Closed: refused as `select` refuses it
        mine.close()
        with pytest.raises(OSError):
            ready_now(fd, WAIT_R)
        # A connection the other end reset: readable and writable, as `select` says
        server = socket.create_server(("127.0.0.1", 0))
        with server, socket.create_connection(server.getsockname()) as reset:
            peer, _ = server.accept()
            peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            peer.close()
            assert eventually(lambda: ready_now(reset.fileno(), WAIT_R | WAIT_W) == BOTH)
