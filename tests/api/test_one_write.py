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
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
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


def _connected(
    app: Any, protocol: type[HttpToolsProtocol] = BoundedHttpToolsProtocol
) -> tuple[HttpToolsProtocol, Recorded]:
    """A connection served by `protocol` (the server's, or uvicorn's own to compare), its
    transport recording."""
    config = Config(app, log_level="critical", lifespan="off")
    config.load()
    transport = Recorded()
    served = protocol(config=config, server_state=ServerState(), app_state={})
    served.connection_made(transport)
    return served, transport


async def _turns(count: int) -> None:
    for _ in range(count):  # the app's task and the writes it leaves to the loop's next turn
        await asyncio.sleep(0)


async def _served(
    app: Any, raw: bytes, protocol: type[HttpToolsProtocol] = BoundedHttpToolsProtocol
) -> Recorded:
    served, transport = _connected(app, protocol)
    served.data_received(raw)
    await _turns(20)
    return transport


def _request(method: str, *, length: int = 0, extra: str = "") -> bytes:
    """A request's head, for a body of `length` bytes sent after it (none by default)."""
    return f"{method} /x HTTP/1.1\r\nHost: t\r\nContent-Length: {length}\r\n{extra}\r\n".encode()


def _responses(data: bytes) -> int:
    return data.count(b"HTTP/1.1 2") + data.count(b"HTTP/1.1 5")


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST", "DELETE"])
@pytest.mark.parametrize("answer", sorted(ANSWERS))
def test_a_response_goes_in_one_write_with_uvicorn_s_bytes(method: str, answer: str) -> None:
    # Given the server's protocol, and uvicorn's own, each serving an app that answers so
    app, raw = _app(ANSWERS[answer]), _request(method)
    ours = asyncio.run(_served(app, raw))
    theirs = asyncio.run(_served(app, raw, HttpToolsProtocol))
    # I expect one response, the same bytes in the same order as uvicorn's, and the
    # connection left as uvicorn leaves it
    sent = b"".join(ours.writes)
    assert sent.startswith(b"HTTP/1.1 ") and _responses(sent) == 1, sent
    assert sent == b"".join(theirs.writes)
    assert ours.closed == theirs.closed
    if answer == "a failure after the head":  # the head, then the connection cut
        assert ours.closed and sent.endswith(b"\r\n\r\n")
        return
    # and the head and the body together in the first write (a chunked body's later parts
    # after it)
    body = ours.writes[0].partition(b"\r\n\r\n")[2]
    if method != "HEAD" and answer in ("a JSON body", "a failure before the answer"):
        assert body, ours.writes
    if answer != "a chunked body":
        assert len(ours.writes) == 1, ours.writes


def test_an_interim_continue_goes_at_once_and_the_answer_in_one_write() -> None:
    # Given a request that asks to be told to send its body
    raw = _request("POST", length=4, extra="Expect: 100-continue\r\n")

    # When the server has read its head, and again once the body came
    async def both() -> tuple[Recorded, list[bytes]]:
        served, transport = _connected(_app(_ok))
        served.data_received(raw)
        await _turns(5)
        first = list(transport.writes)
        served.data_received(b"body")
        await _turns(20)
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
    # I expect two answers, each one write, in the order asked, uvicorn's bytes
    assert len(transport.writes) == 2
    assert all(w.startswith(b"HTTP/1.1 200") and w.endswith(b"true}") for w in transport.writes)
    assert b"".join(transport.writes) == b"".join(
        asyncio.run(_served(_app(_ok), raw, HttpToolsProtocol)).writes
    )
