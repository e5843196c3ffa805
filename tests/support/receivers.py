"""A webhook receiver for tests: a real HTTP server in a thread that records what it is sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from deadletter.adapters.webhooks import HttpxSender
from deadletter.engine.destinations import Destinations
from deadletter.engine.engine import Engine

WAIT = 30.0  # a deadlock guard, never a measure: every wait ends as soon as its event happens


# The receivers listen on loopback, which webhooks reach only where the operator allows it
# (`serve --webhook-allow 127.0.0.0/8`): the tests that use them allow it the same way.
ALLOW_LOCAL = ("127.0.0.0/8",)


def allow_local(engine: Engine) -> HttpxSender:
    """Let `engine`'s subscriptions reach the receivers; the sender to deliver to them."""
    destinations = Destinations(ALLOW_LOCAL)
    engine.subscriptions.destinations = destinations
    return HttpxSender(destinations)


class Receiver:
    """Answers every POST with `status` (and `reply` as its body, `headers` among its
    headers); with a `gate`, holds each answer until it is set."""

    def __init__(
        self,
        status: int = 200,
        gate: threading.Event | None = None,
        reply: bytes = b"",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.gate = gate
        self.reply = reply
        self.headers = headers or {}
        self.posts: list[tuple[dict[str, str], Any]] = []
        self.arrived = threading.Condition()
        self.url = ""

    @property
    def bodies(self) -> list[Any]:
        with self.arrived:
            return [body for _, body in self.posts]

    def record(self, headers: dict[str, str], raw: bytes) -> None:
        with self.arrived:
            self.posts.append((headers, json.loads(raw)))
            self.arrived.notify_all()

    def wait_for(self, count: int, timeout: float = WAIT) -> bool:
        """Whether `count` POSTs have arrived (waiting for them as long as `timeout`)."""
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.posts) >= count, timeout)


@contextmanager
def receiving(
    status: int = 200,
    gate: threading.Event | None = None,
    reply: bytes = b"",
    headers: dict[str, str] | None = None,
) -> Iterator[Receiver]:
    receiver = Receiver(status, gate, reply, headers)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.record({k.lower(): v for k, v in self.headers.items()}, raw)
            if receiver.gate is not None:
                receiver.gate.wait(WAIT)
            self.send_response(receiver.status)
            for name, value in receiver.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(receiver.reply)))
            self.end_headers()
            self.wfile.write(receiver.reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, name="test-receiver", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        if receiver.gate is not None:
            receiver.gate.set()
        server.shutdown()
        server.server_close()
        thread.join(WAIT)
