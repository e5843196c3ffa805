"""Waiting, in a test, until a long poll is really waiting on the server, so that a send made
afterwards can only reach it through the wake-up and not be found by its first look."""

from __future__ import annotations

import time

from deadletter.api.listeners import for_engine
from deadletter.api.notify import Notifier
from deadletter.engine.engine import Engine


def until_polling(engine: Engine, project: str, queue: str, timeout: float = 30.0) -> None:
    # The SQS face's long polls and the WebSocket face's subscriptions each have a notifier.
    heard = [*engine.listeners, *for_engine(engine).live()]
    notifiers = [n for n in heard if isinstance(n, Notifier)]
    deadline = time.monotonic() + timeout
    while not any(n.waiting(project, queue) for n in notifiers):
        assert time.monotonic() < deadline, f"no long poll started waiting on {queue!r}"
        time.sleep(0.01)
