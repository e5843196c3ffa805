"""Waiting in a test for what another thread or process does: `eventually`, and
`until_polling`, until a long poll is really waiting on the server, so that a send made
afterwards can only reach it through the wake-up and not be found by its first look."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from deadletter.api.listeners import for_engine
from deadletter.api.notify import Notifier
from deadletter.engine.engine import Engine

T = TypeVar("T")


def eventually(condition: Callable[[], T], seconds: float = 5.0, what: str = "the condition") -> T:
    """What `condition()` returns once it is true; fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, f"{what} did not hold within {seconds} s"
        time.sleep(0.02)
    return found


def waiting_on(engine: Engine, project: str, queue: str) -> int:
    """How many long polls and subscriptions wait on `queue` in `engine`'s server."""
    # The SQS face's long polls and the WebSocket face's subscriptions each have a notifier.
    heard = [*engine.listeners, *for_engine(engine).live()]
    return sum(n.waiting(project, queue) for n in heard if isinstance(n, Notifier))


def until_polling(
    engine: Engine, project: str, queue: str, timeout: float = 30.0, count: int = 1
) -> None:
    """Until `count` long polls (or subscriptions) wait on `queue`."""
    deadline = time.monotonic() + timeout
    while waiting_on(engine, project, queue) < count:
        assert time.monotonic() < deadline, f"not {count} long polls waiting on {queue!r}"
        time.sleep(0.01)
