"""The hot calls of a group run on the event loop's own thread, and wait for PostgreSQL
through the loop.

The engine is synchronous: a rule calls `Transaction` methods one after another, and each
runs its statements. Run on a thread of their own, a group's calls took the interpreter lock
back from the loop after every reply of PostgreSQL (about twelve `futex` calls a message on
W1, where SQLite's server made one), and a reply waited for the loop to let the lock go.
Here the group runs in a greenlet on the loop's thread (`on_loop`), the way SQLAlchemy's
asyncio layer runs a synchronous driver: where psycopg would block on the connection's
socket (`LoopWaitingConnection.wait`), the greenlet hands psycopg's own asyncio wait to the
loop and switches back to it; the loop serves other requests, and switches into the greenlet
again when the socket is ready. Everything else is as on a thread: the same statements, the
same transaction, the same `Connection` methods; used from any other thread, the connection
waits as psycopg's does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import greenlet
import psycopg
from psycopg import waiting

T = TypeVar("T")
# How often psycopg's own waits look up from the socket (its `_WAIT_INTERVAL`).
WAIT_INTERVAL = 0.1


class _OnLoop(greenlet.greenlet):  # type: ignore[misc]
    """Work run by `on_loop`: its waits on a connection go to the loop."""


def _awaited(awaitable: Awaitable[T]) -> T:
    """From inside `on_loop`'s work: `awaitable`'s result, awaited by the loop meanwhile."""
    return greenlet.getcurrent().parent.switch(awaitable)  # type: ignore[no-any-return]


def running_on_loop() -> bool:
    """Whether this is work run by `on_loop` (a wait now would be the loop's)."""
    return isinstance(greenlet.getcurrent(), _OnLoop)


async def on_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` on the loop's thread; where it waits on a connection of
    `LoopWaitingConnection`, the loop serves others. What it raises is raised here; what the
    wait raises (the caller cancelled) is raised in `fn` where it waits."""
    work = _OnLoop(fn, greenlet.getcurrent())
    step = work.switch(*args, **kwargs)
    while not work.dead:
        try:
            value = await step
        except BaseException as exc:  # into the work, where it waited
            step = work.throw(exc)
        else:
            step = work.switch(value)
    return step  # type: ignore[no-any-return]


class LoopWaitingConnection(psycopg.Connection[Any]):
    """A pooled connection that waits through the loop in work run by `on_loop`, and as
    psycopg's own anywhere else."""

    def wait(self, gen: Any, interval: float = WAIT_INTERVAL, timeout: float | None = None) -> Any:
        if running_on_loop():
            socket = self.pgconn.socket
            return _awaited(waiting.wait_async(gen, socket, interval=interval, timeout=timeout))
        return super().wait(gen, interval, timeout)
