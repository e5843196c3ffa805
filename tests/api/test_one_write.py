"""A response's head and body in one write (`api/one_write.py`), through the server's own HTTP
protocol (`BoundedHttpToolsProtocol`) on a transport that records each write: whatever the
method and however the app answers, the bytes and their order are uvicorn's, and a response
that has a body goes to the socket in one write."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from deadletter.api.http_head import BoundedHttpToolsProtocol

Send = Callable[[dict[str, Any]], Awaitable[None]]


class Recorded(asyncio.Transport):
    """A socket's transport that keeps each write apart."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 8080)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _ok(send: Send) -> None:
    body = b'{"ok": true}'
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


async def _no_content(send: Send) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _chunked(send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"HTTP/1.1 a body", "more_body": True})
    await send({"type": "http.response.body", "body": b"more"})


async def _fails_before(send: Send) -> None:
    raise RuntimeError("before the answer")


async def _fails_after(send: Send) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"10")]})  # fmt: skip
    raise RuntimeError("after the head")


ANSWERS = {
    "a JSON body": _ok,
    "no content": _no_content,
    "a chunked body": _chunked,
    "a failure before the answer": _fails_before,
    "a failure after the head": _fails_after,
}


def _app(answer: Callable[[Send], Awaitable[None]]) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] == "http":
            while (await receive()).get("more_body"):
                pass
            await answer(send)

    return app


async def _served(app: Any, raw: bytes, turns: int = 20) -> Recorded:
    config = Config(app, log_level="critical", lifespan="off")
    config.load()
    transport = Recorded()
    protocol = BoundedHttpToolsProtocol(config=config, server_state=ServerState(), app_state={})
    protocol.connection_made(transport)
    protocol.data_received(raw)
    for _ in range(turns):  # the app's task and the writes it leaves to the loop's next turn
        await asyncio.sleep(0)
    return transport


def _request(method: str, *, body: bytes = b"", extra: str = "") -> bytes:
    head = f"{method} /x HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


def _responses(data: bytes) -> int:
    return data.count(b"HTTP/1.1 2") + data.count(b"HTTP/1.1 5")


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST", "DELETE"])
@pytest.mark.parametrize("answer", sorted(ANSWERS))
def test_a_response_goes_in_one_write_with_uvicorn_s_bytes(method: str, answer: str) -> None:
    # Given the server's protocol and an app that answers so
    transport = asyncio.run(_served(_app(ANSWERS[answer]), _request(method, body=b"")))
    sent = b"".join(transport.writes)
    # I expect one response, its head first, and every byte of it written
    assert sent.startswith(b"HTTP/1.1 "), sent
    assert _responses(sent) == 1, sent
    if answer == "a failure after the head":  # as uvicorn: the head, then the connection cut
        assert transport.closed and sent.endswith(b"\r\n\r\n")
        return
    # and each write but a chunked body's later parts to carry the head and the body together
    body = transport.writes[0].partition(b"\r\n\r\n")[2]
    if method != "HEAD" and answer in ("a JSON body", "a failure before the answer"):
        assert body, transport.writes
    if answer != "a chunked body":
        assert len(transport.writes) == 1, transport.writes


def test_an_interim_continue_goes_at_once_and_the_answer_in_one_write() -> None:
    # Given a request that asks to be told to send its body
    raw = _request("POST", body=b"", extra="Expect: 100-continue\r\n").replace(
        b"Content-Length: 0", b"Content-Length: 4"
    )

    # When the server has read its head, and again once the body came
    async def both() -> tuple[Recorded, list[bytes]]:
        config = Config(_app(_ok), log_level="critical", lifespan="off")
        config.load()
        transport = Recorded()
        protocol = BoundedHttpToolsProtocol(config=config, server_state=ServerState(), app_state={})
        protocol.connection_made(transport)
        protocol.data_received(raw)
        for _ in range(5):
            await asyncio.sleep(0)
        first = list(transport.writes)
        protocol.data_received(b"body")
        for _ in range(20):
            await asyncio.sleep(0)
        return transport, first

    transport, first = asyncio.run(both())
    # I expect the 100 written at once, alone, before the body is sent
    assert first == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    # and then the answer, head and body, in one write
    assert len(transport.writes) == 2
    assert transport.writes[1].startswith(b"HTTP/1.1 200") and transport.writes[1].endswith(
        b'{"ok": true}'
    )


def test_pipelined_requests_are_answered_in_order_one_write_each() -> None:
    # Given two requests sent together on one connection
    raw = _request("GET") + _request("GET")
    transport = asyncio.run(_served(_app(_ok), raw))
    # I expect two answers, each one write, in the order asked
    assert len(transport.writes) == 2
    assert all(w.startswith(b"HTTP/1.1 200") and w.endswith(b"true}") for w in transport.writes)
