"""Adversarial: request heads at and one past each bound of the limit table, against the
server as `deadletter serve` runs it; and another tenant's request while one client sends a
head of tens of MiB."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from deadletter.domain.limits import HEAD_BYTES, HEADER_COUNT, REQUEST_LINE
from tests.api.serve_process import start, stop

CLIENT = "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("head")
    proc, url = start(f"sqlite:///{data / 'd.db'}", data)
    try:
        yield url
    finally:
        stop(proc)


def _head(target: str = "/v2/ping", headers: list[tuple[str, str]] | None = None) -> bytes:
    lines = [f"GET {target} HTTP/1.1", "Host: t", "Connection: close"]
    lines += [f"{n}: {v}" for n, v in headers or []]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _status(url: str, raw: bytes) -> int:
    """The status a raw request is answered with (0: the connection closed without one)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        # Refused before all was sent: the answer is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(raw)
        answer = b""
        try:
            while b"\r\n" not in answer:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except ConnectionResetError:
            pass
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def _target(length: int) -> str:
    """A request target of `length` bytes; at the bound its head is read whole and the app
    answers it, refusing the query parameter it does not know (400)."""
    base = "/v2/ping?pad="
    return base + "a" * (length - len(base))


def _fields(count: int) -> list[tuple[str, str]]:
    return [(f"X-F{i}", "v") for i in range(count - 2)]  # Host and Connection count too


def _bytes(total: int) -> bytes:
    head = _head(headers=[("X-Pad", "")])
    return _head(headers=[("X-Pad", "a" * (total - len(head)))])


# (request exactly at the bound, status the app answers it, request one past it, status past it)
CASES: dict[str, tuple[Callable[[], bytes], int, Callable[[], bytes], int]] = {
    "request line": (
        lambda: _head(_target(REQUEST_LINE)),
        400,
        lambda: _head(_target(REQUEST_LINE + 1)),
        414,
    ),
    "header count": (
        lambda: _head(headers=_fields(HEADER_COUNT)),
        204,
        lambda: _head(headers=_fields(HEADER_COUNT + 1)),
        431,
    ),
    "head bytes": (lambda: _bytes(HEAD_BYTES), 204, lambda: _bytes(HEAD_BYTES + 1), 431),
    "one header of 1 MiB": (lambda: _bytes(1024), 204, lambda: _bytes(1024 * 1024), 431),
    "5,000 headers": (lambda: _head(), 204, lambda: _head(headers=_fields(5000)), 431),
}


@pytest.mark.parametrize("case", CASES)
def test_a_head_at_its_bound_is_served_and_one_past_it_refused(server: str, case: str) -> None:
    at, served, past, status = CASES[case]
    assert _status(server, at()) == served
    assert _status(server, past()) == status


def test_a_head_flood_does_not_slow_another_tenant(server: str) -> None:
    # Given one client sending a 48 MiB header
    host, port = server.removeprefix("http://").split(":")
    sent = threading.Event()

    def flood() -> None:
        with socket.create_connection((host, int(port)), timeout=60) as s:
            s.sendall(b"GET /v2/ping HTTP/1.1\r\nHost: t\r\nX-Big: ")
            sent.set()
            chunk = b"a" * (1024 * 1024)
            try:
                for _ in range(48):
                    s.sendall(chunk)
                s.sendall(b"\r\n\r\n")
                s.recv(100)
            except OSError:
                pass

    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    assert sent.wait(10)
    # When another tenant asks for its queues meanwhile, it is answered as fast as ever
    headers = {"Client-ID": CLIENT, "X-Project-ID": "quiet"}
    slowest = 0.0
    with httpx.Client(base_url=server, headers=headers, timeout=30) as client:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            began = time.monotonic()
            assert client.get("/v2/queues").status_code == 200
            slowest = max(slowest, time.monotonic() - began)
    flooder.join(60)
    assert slowest < 1.0, f"another tenant waited {slowest:.2f} s"


def test_the_limits_hold_in_every_worker_mode(tmp_path: Path) -> None:
    """The server's own protocol is what uvicorn runs, named in its configuration."""
    from deadletter.api.http_head import BoundedHttpToolsProtocol
    from deadletter.config import ServerConfig
    from deadletter.server import _uvicorn_options

    config = ServerConfig(db=f"sqlite:///{tmp_path / 'd.db'}", data_dir=tmp_path)
    assert _uvicorn_options(config)["http"] is BoundedHttpToolsProtocol
