"""The hot calls of a group run on the event loop's own thread, and wait for PostgreSQL
through the loop.

The engine is synchronous: a rule calls `Transaction` methods one after another, and each
runs its statements. Run on a thread of their own, a group's calls took the interpreter lock
back from the loop after every reply of PostgreSQL (about twelve `futex` calls a message on
W1, where SQLite's server made one), and a reply waited for the loop to let the lock go.
Here the group runs in a greenlet on the loop's thread (`on_loop`), the way SQLAlchemy's
asyncio layer runs a synchronous driver: where psycopg would block on the connection's
socket (`LoopWaitingConnection.wait`), the greenlet switches back to the loop, which serves
other requests and switches into the greenlet again when the socket is ready. Everything
else is as on a thread: the same statements, the same transaction, the same `Connection`
methods; used from any other thread, the connection waits as psycopg's does.

A wait for a reply is the loop's reader on the socket, whose callback switches into the
greenlet at once: no future, task or timer a wait (psycopg's `wait_async` made each, and
added and removed the reader, two `epoll_ctl` calls, at every wait). The reader stays while
the work waits on the same connection again, and goes when it waits on something else, ends,
or closes the connection: the loop never watches a connection the work is done with, nor a
closed socket (uvloop aborts the process on one), nor a new socket given the old one's
number. A connection dropped broken and collected closes its socket without that, and uvloop
then keeps a stale watch under the number, which hides the next socket given it: every half
second the loop looks for a work whose socket has stayed readable, and resumes it (`_sweep`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import select
import weakref
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

import greenlet
import psycopg
from psycopg import errors as pg_errors
from psycopg import waiting
from psycopg.waiting import READY_R, WAIT_R, WAIT_W

T = TypeVar("T")
# How often psycopg's own waits look up from the socket (its `_WAIT_INTERVAL`).
WAIT_INTERVAL = 0.1


class _OnLoop(greenlet.greenlet):  # type: ignore[misc]
    """Work run by `on_loop`: its waits on a connection go to the loop."""

    def __init__(self, fn: Callable[..., Any], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(fn, greenlet.getcurrent())
        self.loop = loop
        self.done: asyncio.Future[Any] = loop.create_future()
        # The connection whose socket has the loop's reader for this work, and that socket.
        self.reading: tuple[psycopg.Connection[Any], int] | None = None
        # What the loop awaits for it otherwise: only its own outcome resumes the work.
        self.awaiting: asyncio.Future[Any] | None = None


class _Readable:
    """What the work waits for: a connection's socket readable."""

    __slots__ = ("connection", "fileno")

    def __init__(self, connection: psycopg.Connection[Any], fileno: int) -> None:
        self.connection = connection
        self.fileno = fileno


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
    work = _OnLoop(fn, asyncio.get_running_loop())
    _step(work, lambda: work.switch(*args, **kwargs))
    while True:
        try:
            return await asyncio.shield(work.done)
        except asyncio.CancelledError as exc:
            if work.done.done():
                raise
            # Into the work, where it waits; it ends as it may, and what it raises is ours.
            _stop_reading(work)
            _stop_awaiting(work)
            _step(work, lambda exc=exc: work.throw(exc))  # type: ignore[misc]


def _step(work: _OnLoop, resume: Callable[[], Any]) -> None:
    """Resume `work` (on the loop's thread) and arrange for whatever it waits for next."""
    try:
        wanted = resume()
    except BaseException as exc:  # what the work raised: the caller's
        _stop_reading(work)
        if not work.done.done():
            work.done.set_exception(exc)
        return
    if work.dead:
        _stop_reading(work)
        if not work.done.done():
            work.done.set_result(wanted)
        return
    if isinstance(wanted, _Readable):
        reading = work.reading
        if reading is None or reading[0] is not wanted.connection or reading[1] != wanted.fileno:
            _stop_reading(work)
            # A reader the loop still holds under this number is of a socket gone since (a
            # connection collected, not closed, or one whose reader could not be taken off
            # once it was closed): the loop would keep watching that one, and never this.
            with contextlib.suppress(Exception):
                work.loop.remove_reader(wanted.fileno)
            work.loop.add_reader(wanted.fileno, _readable, work)
            _readers.setdefault(work.loop, {})[wanted.fileno] = work
            work.reading = (wanted.connection, wanted.fileno)
            if work.loop not in _sweeping:
                _sweeping[work.loop] = work.loop.call_later(SWEEP_SECONDS, _sweep, work.loop, set())
        return
    _stop_reading(work)  # any other wait: the loop awaits it
    future = work.awaiting = asyncio.ensure_future(wanted)
    future.add_done_callback(partial(_awaited_done, work))


def _awaited_done(work: _OnLoop, future: asyncio.Future[Any]) -> None:
    if work.awaiting is future:  # not one given up (`_stop_awaiting`)
        work.awaiting = None
        _step(work, _resumed_with(work, future))


def _stop_awaiting(work: _OnLoop) -> None:
    if work.awaiting is not None:
        work.awaiting.cancel()
        work.awaiting = None


def _resumed_with(work: _OnLoop, future: asyncio.Future[Any]) -> Callable[[], Any]:
    """How to resume `work` with what `future` ended with."""
    if future.cancelled():
        return lambda: work.throw(asyncio.CancelledError())
    exc = future.exception()
    if exc is not None:
        return lambda: work.throw(exc)
    return lambda: work.switch(future.result())


def _readable(work: _OnLoop) -> None:
    _step(work, lambda: work.switch(READY_R))


def _stop_reading(work: _OnLoop) -> None:
    """The loop's reader for `work` gone, if it is still the work's: a connection dropped
    broken is closed whenever it is collected, and a new connection may have its socket's
    number, and another work a reader on it, before this work stops reading."""
    if work.reading is not None:
        fileno = work.reading[1]
        readers = _readers.get(work.loop)
        if readers is not None and readers.get(fileno) is work:
            del readers[fileno]
            with contextlib.suppress(Exception):  # a loop closed meanwhile watches nothing
                work.loop.remove_reader(fileno)
        work.reading = None


# The work each socket number's reader on a loop belongs to.
_readers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, _OnLoop]] = (
    weakref.WeakKeyDictionary()
)
# Each loop's next look for lost wake-ups (`_sweep`), while any work reads on it.
_sweeping: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.TimerHandle] = (
    weakref.WeakKeyDictionary()
)
SWEEP_SECONDS = 0.5


def _sweep(loop: asyncio.AbstractEventLoop, readable_before: set[int]) -> None:
    """Resume each work whose socket has been readable since the last look without its reader
    being called: a reader the loop lost. A socket closed without its reader taken off (a
    broken connection dropped and collected) leaves the loop a stale watch under its number,
    and uvloop keeps that watch for the next socket given the number, which it then never
    reports (seen under connection resets: a group waited for ever on a reply that had
    come). A reader the loop keeps is called within one turn, so a socket readable at two
    looks half a second apart has lost its reader; the work is resumed, and its next wait
    puts a new reader on."""
    readers = _readers.get(loop)
    if not readers:
        _sweeping.pop(loop, None)
        return
    readable = {fd for fd in readers if _readable_now(fd)}
    for fd in readable & readable_before:
        work = readers.get(fd)
        if work is not None and work.reading is not None and work.reading[1] == fd:
            _stop_reading(work)
            _readable(work)
    _sweeping[loop] = loop.call_later(SWEEP_SECONDS, _sweep, loop, readable)


def _readable_now(fileno: int) -> bool:
    try:
        return bool(ready_now(fileno, WAIT_R) & READY_R)
    except (OSError, ValueError):  # closed meanwhile: its work learns it when it reads
        return False


def _release(connection: psycopg.Connection[Any]) -> None:
    """Before `connection`'s socket is closed: the loop must not watch a closed socket (uvloop
    aborts the process), nor take another socket given its number for it."""
    work = greenlet.getcurrent()
    if isinstance(work, _OnLoop) and work.reading is not None and work.reading[0] is connection:
        _stop_reading(work)


class LoopWaitingConnection(psycopg.Connection[Any]):
    """A pooled connection that waits through the loop in work run by `on_loop`, and as
    psycopg's own anywhere else."""

    def wait(self, gen: Any, interval: float = WAIT_INTERVAL, timeout: float | None = None) -> Any:
        if running_on_loop():
            if timeout is None:
                return _wait_on_loop(gen, self)
            socket = self.pgconn.socket
            return _awaited(waiting.wait_async(gen, socket, interval=interval, timeout=timeout))
        return super().wait(gen, interval, timeout)

    def close(self) -> None:
        _release(self)
        super().close()


def _wait_on_loop(gen: Any, connection: psycopg.Connection[Any]) -> Any:
    """psycopg's generator `gen` run to its end from work on the loop: a wait to read is the
    loop's reader (module docstring); a socket asked for writing is nearly always writable,
    and is polled without the loop unless it is not."""
    me = greenlet.getcurrent()
    fileno = connection.pgconn.socket
    readable = _Readable(connection, fileno)
    try:
        state = next(gen)
        while True:
            if state & WAIT_W:
                ready = ready_now(fileno, state)
                if not ready:
                    ready = _awaited(_ready_later(fileno, state))
            elif state & WAIT_R:
                ready = me.parent.switch(readable)
            else:
                raise pg_errors.InternalError(f"bad poll status: {state}")
            state = gen.send(ready)
    except OSError as exc:  # the socket is gone: the connection was closed
        raise pg_errors.OperationalError("connection socket closed") from exc
    except StopIteration as end:
        return end.value


def ready_now(fileno: int, state: int) -> int:
    """The readiness of socket `fileno` for `state` (psycopg's WAIT_R and WAIT_W), without
    waiting. By `poll`, not `select`: `select.select` refuses a descriptor numbered 1,024 or
    more, which a connection opened while the server holds that many sockets gets."""
    poller = select.poll()
    poller.register(
        fileno, (select.POLLIN if state & WAIT_R else 0) | (select.POLLOUT if state & WAIT_W else 0)
    )
    polled = poller.poll(0)
    events = polled[0][1] if polled else 0
    if events & select.POLLNVAL:  # as `select` says of a descriptor closed meanwhile
        raise OSError(errno.EBADF, "socket closed", fileno)
    # As `select` reads them: a socket closed by the other end or broken is readable, and a
    # broken one writable too; the read or write then says why.
    readable = events & (select.POLLIN | select.POLLHUP | select.POLLERR)
    writable = events & (select.POLLOUT | select.POLLERR)
    return (READY_R if state & WAIT_R and readable else 0) | (
        waiting.READY_W if state & WAIT_W and writable else 0
    )


async def _ready_later(fileno: int, state: int) -> int:
    """The readiness of `fileno` for `state`, waited for on the loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[int] = loop.create_future()

    def ready(which: int) -> None:
        if not future.done():
            future.set_result(which)

    if state & WAIT_R:
        loop.add_reader(fileno, ready, READY_R)
    loop.add_writer(fileno, ready, waiting.READY_W)
    try:
        return await future
    finally:
        if state & WAIT_R:
            loop.remove_reader(fileno)
        loop.remove_writer(fileno)
