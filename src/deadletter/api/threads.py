"""The worker threads that run the faces' blocking calls (the engine, credential checks).

Starlette's `run_in_threadpool` goes through anyio (a cancel scope, a capacity limiter, a
`queue.Queue` whose condition variable wakes the worker): on the message routes that hop was
about a sixth of the server's Python time (`./dev bench faces` with py-spy). A plain thread
pool takes the call through a `SimpleQueue` and answers through one `call_soon_threadsafe`.
As many threads as anyio's default limiter allows, so as many calls wait on the store at once.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_pool = ThreadPoolExecutor(max_workers=40, thread_name_prefix="deadletter-api")


async def in_thread(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)` in a worker thread, in a copy of the caller's context (the store
    keeps which transactions are open in a context variable)."""
    context = contextvars.copy_context()
    call = partial(context.run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_pool, call)
