"""The worker threads that run the faces' blocking calls (the engine, credential checks).

Starlette's `run_in_threadpool` goes through anyio (a cancel scope, a capacity limiter, a
`queue.Queue` whose condition variable wakes the worker), and `loop.run_in_executor` through
two futures chained by callbacks and the executor's locks: on the message routes either hop
cost more of the server's Python time than the engine did (`./dev bench faces` with py-spy).
Here a call goes to the threads through one `SimpleQueue` and its result comes back through
one `call_soon_threadsafe` onto the caller's own future.

A call whose work the request bounds (the message routes) first tries the event loop itself
(`on_loop`): where the store can run it without waiting (`Engine.run_now`), it runs there,
and the first of the calls that ran in one turn of the loop commits them all; no hop at all.
On a store whose statements wait on the network (PostgreSQL) it goes instead to a group:
every such call queued at once runs in one transaction, on the loop's own thread, the loop
serving other requests while the group waits for the database (`Engine.run_together_on_loop`,
`_Groups`); a call the group could not keep goes on to a worker thread, alone.

As many threads as anyio's default limiter allows, so as many calls wait on the store at once;
they start as calls find none idle, and are daemons that hold nothing between calls.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import queue
import threading
import weakref
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

if TYPE_CHECKING:
    from deadletter.engine import Deferred, Engine

P = ParamSpec("P")
T = TypeVar("T")

MAX_THREADS = 40

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]


class _Threads:
    def __init__(self, size: int) -> None:
        self.size = size
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        # One entry per thread waiting for a job that no call has counted on yet; a call takes
        # one or starts a thread, so a job never waits behind another while a thread could
        # be started. `list.append` and `list.pop` are atomic, and cost less than a lock.
        self.idle: list[None] = []
        self.lock = threading.Lock()  # only to start a thread
        self.started = 0

    def submit(self, job: _Job) -> None:
        self.jobs.put(job)
        try:
            self.idle.pop()
        except IndexError:
            with self.lock:
                if self.started < self.size:  # else the job waits for the first thread free
                    self.started += 1
                    threading.Thread(target=self._run, name="deadletter-api", daemon=True).start()

    def _run(self) -> None:
        while True:
            loop, future, call = self.jobs.get()
            result: Any = None
            error: BaseException | None = None
            try:
                result = call()
            except BaseException as exc:  # handed to the caller, as an executor does
                error = exc
            # A loop closed meanwhile (a server shut down mid-call) has no one left to tell.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, future, result, error)
            del loop, future, call, result, error  # hold nothing while idle
            self.idle.append(None)


def _settle(future: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    if future.cancelled():  # the caller went away (a client disconnected); nothing to tell
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)


_threads = _Threads(MAX_THREADS)
# How often a call waits on the loop for the store to be free before it takes a worker thread
# (which then waits in the store's queue, and is sure to get its turn).
FREE_WAITS = 3


async def in_thread(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)` in a worker thread, in a copy of the caller's context (the store
    keeps which transactions are open in a context variable)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    call = partial(contextvars.copy_context().run, fn, *args, **kwargs)
    _threads.submit((loop, future, call))
    return await future


async def on_loop(engine: Engine, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)`, calls of `engine` whose size the request bounds, run on the event
    loop at once if the store can run them without waiting, answered once their commits are
    known. While another transaction holds the store, the call waits on the loop for it to
    end; a call that still cannot run at once (another process holds the store) goes to a
    worker thread. On a store that never runs work at once but groups it (PostgreSQL) the
    call joins the loop's next group (`_Groups`)."""
    if engine.runs_now:
        return await _now(engine, partial(fn, *args, **kwargs))
    if engine.runs_together:
        return await _together(engine, partial(fn, *args, **kwargs))
    return await in_thread(fn, *args, **kwargs)


async def _together(engine: Engine, work: Callable[[], T]) -> T:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    by_loop = _groups.get(engine)
    if by_loop is None:
        by_loop = _groups.setdefault(engine, weakref.WeakKeyDictionary())
    groups = by_loop.get(loop)
    if groups is None:
        groups = by_loop[loop] = _Groups(engine)
    groups.submit(future, work)
    return await future


class _Groups:
    """The hot calls of one engine on one event loop, run in groups on the loop's thread
    (`Engine.run_together_on_loop`: where a group waits for the store, the loop serves the
    other requests). A runner whose turn it is takes every call queued and runs them
    together (the store caps how many share a commit); once they have run, it passes the
    turn on, and the next runner takes the calls queued meanwhile while this one waits for
    its COMMIT; then it settles its calls. One turn at a time, or two while at least
    `SECOND_TURN_AT` calls wait: then a second group runs its statements on another
    connection while the first waits for the database. A runner ends when no call is left;
    the next call starts one again. Nothing here holds the loop, or the engine while no
    group runs."""

    def __init__(self, engine: Engine) -> None:
        self.engine = weakref.ref(engine)
        self.calls: list[_Call] = []
        self.turns = 0  # runners taking and running calls now
        self.waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self.running = 0

    def submit(self, future: asyncio.Future[Any], work: Callable[[], Any]) -> None:
        self.calls.append((future, work))
        if self.running < GROUP_RUNNERS:
            self.running += 1
            asyncio.get_running_loop().create_task(self._run())
        elif self._may_take_turn():
            self._wake_one()

    async def _run(self) -> None:
        try:
            while self.calls:
                await self._take_turn()
                turn = _Turn(self._pass_turn)
                try:
                    jobs, self.calls = self.calls, []
                    if jobs:
                        await self._run_group(jobs, turn.pass_on)
                finally:
                    turn.pass_on()
        finally:
            self.running -= 1

    def _may_take_turn(self) -> bool:
        """The first turn, or another while enough calls wait."""
        return self.turns == 0 or (self.turns < TURNS and len(self.calls) >= SECOND_TURN_AT)

    async def _take_turn(self) -> None:
        while not self._may_take_turn():
            woken = asyncio.get_running_loop().create_future()
            self.waiting.append(woken)
            try:
                await woken
            except BaseException:
                if woken.done() and not woken.cancelled():
                    self._wake_one()  # woken as it was cancelled: the next one may go
                raise
        self.turns += 1

    def _pass_turn(self) -> None:
        self.turns -= 1
        self._wake_one()

    def _wake_one(self) -> None:
        while self.waiting:
            woken = self.waiting.popleft()
            if not woken.done():
                woken.set_result(None)
                return

    async def _run_group(self, jobs: list[_Call], ran: Callable[[], None]) -> None:
        """Run `jobs` together, passing the turn on (`ran`) before their COMMIT, and settle
        each; a cancellation (the loop closing) still settles them, then goes on."""
        loop = asyncio.get_running_loop()
        outcomes: list[Deferred[Any] | BaseException | None]
        engine = self.engine()
        try:
            if engine is None:
                raise RuntimeError("the engine is gone")
            outcomes = list(await engine.run_together_on_loop([w for _, w in jobs], ran=ran))
        except BaseException as exc:  # handed to each caller, as a worker thread does
            _settle_group(loop, [(future, exc, work) for future, work in jobs])
            if not isinstance(exc, Exception):
                raise
            return
        finally:
            del engine
        _settle_group(loop, [(f, done, w) for (f, w), done in zip(jobs, outcomes, strict=True)])


class _Turn:
    """A runner's turn to take and run calls, passed on once."""

    def __init__(self, pass_turn: Callable[[], None]) -> None:
        self.pass_turn: Callable[[], None] | None = pass_turn

    def pass_on(self) -> None:
        pass_turn, self.pass_turn = self.pass_turn, None
        if pass_turn is not None:
            pass_turn()


# Runners of groups on a loop: one runs calls while the others wait for their COMMITs (the
# disk's flush, in which one runner would leave the calls queued meanwhile waiting). As
# threads, one carried 0.8-0.9 times the rate of a thread per call, two and three about the
# same rate (docs/benchmarks.md, "The hot calls in one transaction per group").
GROUP_RUNNERS = 3
# Two groups may run their statements at once while this many calls wait: with few calls
# queued a second turn only splits them into more COMMITs (docs/benchmarks.md, "Less held in
# a group's turn, and a second turn while calls queue").
TURNS = 2
SECOND_TURN_AT = 3
_Call = tuple["asyncio.Future[Any]", Callable[[], Any]]
_groups: weakref.WeakKeyDictionary[Engine, weakref.WeakKeyDictionary[Any, _Groups]] = (
    weakref.WeakKeyDictionary()
)
# A call of a group, and how it went: its `Deferred`, None to run it again alone, or what
# kept the group from running.
_Told = tuple["asyncio.Future[Any]", "Deferred[Any] | BaseException | None", Callable[[], Any]]


def _settle_group(loop: asyncio.AbstractEventLoop, told: list[_Told]) -> None:
    """On the loop: each call of a group learns how it went (its events told first, even if
    its caller went away); one the group did not keep goes to a worker thread, alone."""
    for future, done, work in told:
        if done is None:
            _threads.submit((loop, future, partial(contextvars.copy_context().run, work)))
            continue
        if isinstance(done, BaseException):
            _settle(future, None, done)
            continue
        result: Any = None
        error: BaseException | None = None
        try:
            result = done.result()
        except Exception as exc:  # the call's own error, or the COMMIT's
            error = exc
        _settle(future, result, error)


async def _now(engine: Engine, work: Callable[[], T]) -> T:
    loop = asyncio.get_running_loop()
    for _ in range(FREE_WAITS):
        done = engine.run_now(work)
        if done is not None:
            break
        free = loop.create_future()
        if engine.when_store_free(partial(_wake, loop, free)):
            await free
    else:
        return await in_thread(work)
    if done.committing:
        try:
            # The calls already ready on the loop run meanwhile and join the same commit.
            await asyncio.sleep(0)
        except asyncio.CancelledError:  # the caller went away: the work and its events stand
            if done.when_committed(partial(_committed, loop, None, done)):
                loop.call_soon(engine.commit_now)
            else:
                done.settle()
            raise
        if done.committing:
            engine.commit_now()  # the first of those calls back commits them all
        if done.committing:  # a transaction of another thread holds the store: it commits
            committed: asyncio.Future[None] = loop.create_future()
            if done.when_committed(partial(_committed, loop, committed, done)):
                await committed
    return done.result()


def _wake(loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> None:
    with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: no one left to tell
        loop.call_soon_threadsafe(_settle, future, None, None)


def _committed(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[None] | None, done: Deferred[Any]
) -> None:
    """From the committing thread: settle `done` on the loop (its events are told even if the
    caller went away meanwhile), then wake the caller, if it waits."""
    try:
        here = asyncio.get_running_loop() is loop
    except RuntimeError:  # no loop runs in this thread
        here = False
    if here:  # no wake-up from another thread needed
        loop.call_soon(_settle_deferred, future, done)
        return
    with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: no one left to tell
        loop.call_soon_threadsafe(_settle_deferred, future, done)


def _settle_deferred(future: asyncio.Future[None] | None, done: Deferred[Any]) -> None:
    try:
        done.settle()
    finally:
        if future is not None and not future.cancelled():
            future.set_result(None)
