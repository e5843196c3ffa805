"""The worker threads that run the faces' blocking calls (the engine, credential checks).

Starlette's `run_in_threadpool` goes through anyio (a cancel scope, a capacity limiter, a
`queue.Queue` whose condition variable wakes the worker), and `loop.run_in_executor` through
two futures chained by callbacks and the executor's locks: on the message routes either hop
cost more of the server's Python time than the engine did (`./dev bench faces` with py-spy).
Here a call goes to the threads through one `SimpleQueue` and its result comes back through
one `call_soon_threadsafe` onto the caller's own future.

As many threads as anyio's default limiter allows, so as many calls wait on the store at once;
they start as calls find none idle, and are daemons that hold nothing between calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, ParamSpec, TypeVar

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


async def in_thread(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)` in a worker thread, in a copy of the caller's context (the store
    keeps which transactions are open in a context variable)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    call = partial(contextvars.copy_context().run, fn, *args, **kwargs)
    _threads.submit((loop, future, call))
    return await future
