"""Serving an ASGI app over a real socket from a background thread, for tests that need one."""

from __future__ import annotations

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
