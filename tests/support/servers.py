"""Serving an ASGI app over a real socket from a background thread, for tests that need one."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import uvicorn

START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


@contextmanager
def serving(app: Any, lifespan: Literal["on", "off"] = "on") -> Iterator[str]:
    """Yield the base URL of `app` served by uvicorn on 127.0.0.1 and a port the OS chose; on
    leaving, stop it and wait for its thread, so no request outlives the block.

    The socket is bound before uvicorn starts, so the port is known without asking the server.
    With `lifespan="on"` a failing startup surfaces here instead of leaving a half-made app.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, log_level="warning", lifespan=lifespan)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="test-uvicorn", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=STOP_TIMEOUT)
        sock.close()
        if thread.is_alive():
            raise RuntimeError("the test server did not stop")


class SharedServer:
    """One uvicorn for many tests: each test hosts its own app on it for as long as it needs.

    Starting and stopping uvicorn costs 0.2-0.3 s (its shutdown sleeps in steps of 0.1 s), more
    than most tests' calls. Here the socket and the server live on; what a test would get from a
    server of its own, a new app with its own engine and store, is swapped in, and that app's
    lifespan (its background worker) is run by this class on the server's event loop.
    """

    def __init__(self) -> None:
        self._app: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.url = ""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            # The server's own lifespan: remember its loop; the hosted apps have their own.
            while (await receive())["type"] != "lifespan.shutdown":
                self._loop = asyncio.get_running_loop()
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        app = self._app
        if app is None:
            raise RuntimeError("a request reached the shared test server between two tests")
        await app(scope, receive, send)

    @contextmanager
    def hosting(self, app: Any) -> Iterator[str]:
        """Serve `app`, its lifespan started, until the block ends; yields the base URL."""
        assert self._loop is not None and self._app is None
        lifespan = asyncio.run_coroutine_threadsafe(_Lifespan.start(app), self._loop).result(
            START_TIMEOUT
        )
        self._app = app
        try:
            yield self.url
        finally:
            self._app = None
            asyncio.run_coroutine_threadsafe(lifespan.stop(), self._loop).result(STOP_TIMEOUT)


@contextmanager
def shared_server() -> Iterator[SharedServer]:
    server = SharedServer()
    with serving(server) as url:
        server.url = url
        yield server


class _Lifespan:
    """An ASGI app's lifespan, driven as a server drives it."""

    def __init__(self, app: Any) -> None:
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self._task = asyncio.ensure_future(app(scope, self._inbox.get, self._outbox.put))

    @classmethod
    async def start(cls, app: Any) -> _Lifespan:
        lifespan = cls(app)
        await lifespan._step("lifespan.startup")
        return lifespan

    async def stop(self) -> None:
        await self._step("lifespan.shutdown")
        await self._task

    async def _step(self, event: str) -> None:
        await self._inbox.put({"type": event})
        answer = await self._outbox.get()
        if answer["type"] != f"{event}.complete":
            raise RuntimeError(f"{event} failed: {answer.get('message', answer)}")
