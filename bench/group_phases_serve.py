"""`deadletter serve` with the phases of each grouped call on PostgreSQL timed, for
`./dev bench group_phases`.

    DEADLETTER_PHASES_OUT=FILE python -m bench.group_phases_serve serve --port P --db URL

The functions the group path goes through are wrapped from outside (`src/` is not changed):
`api.threads._together` (a call queued on the loop, and resumed), the work it queues (run in
its group's greenlet on the loop's thread), `PostgresStore._run_group` and `Group.commit` (a
group and its COMMIT) and `LoopWaitingConnection.wait` (the round trips: the greenlet away,
the loop serving others meanwhile). What a group's greenlet has waited so far is kept in a
context variable, which is the greenlet's own. At exit, after the server's graceful
shutdown, the records go to FILE as JSON: `calls`, lists of [kind, queued, start, end,
PostgreSQL wait, 0, resumed, whether it ran in a group], and `groups`, lists of [size,
start, end, COMMIT seconds]; seconds, of `time.perf_counter`.
"""

from __future__ import annotations

import atexit
import json
import os
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from deadletter.api import threads
from deadletter.cli.main import main
from deadletter.engine import Engine
from deadletter.storage.postgres.backend import PostgresStore
from deadletter.storage.postgres.group import Group
from deadletter.storage.postgres.on_loop import LoopWaitingConnection

OUT = "DEADLETTER_PHASES_OUT"
T = TypeVar("T")


# Per greenlet (each runs with a context of its own): seconds waited on connections so far,
# and the group running.
_waited: ContextVar[float] = ContextVar("waited", default=0.0)
_group: ContextVar[list[Any] | None] = ContextVar("group", default=None)
_calls: list[list[Any]] = []
_groups: list[list[Any]] = []


def _kind(work: Callable[..., Any]) -> str:
    func = getattr(work, "func", work)
    return str(getattr(func, "__name__", type(func).__name__))


def _timed(call: list[Any], work: Callable[[], T]) -> T:
    """The work of a call, timed the first time it runs (in its group); a call the group gave
    back runs again alone, untimed, and counts in its `after`."""
    if call[2] is not None:
        return work()
    waited = _waited.get()
    call[2] = time.perf_counter()
    try:
        return work()
    finally:
        call[3] = time.perf_counter()
        call[4] = _waited.get() - waited
        call[7] = _group.get() is not None


def _wrap_together(
    together: Callable[[Engine, Callable[[], Any]], Any],
) -> Callable[[Engine, Callable[[], Any]], Any]:
    async def timed_together(engine: Engine, work: Callable[[], Any]) -> Any:
        call: list[Any] = [_kind(work), time.perf_counter(), None, None, 0.0, 0.0, None, False]
        try:
            return await together(engine, partial(_timed, call, work))
        finally:
            call[6] = time.perf_counter()
            _calls.append(call)

    return timed_together


def _wrap_run_group(run_group: Callable[..., Any]) -> Callable[..., Any]:
    def timed_run_group(
        store: PostgresStore, works: Sequence[Callable[[], Any]], ran: Callable[[], None] | None
    ) -> Any:
        group: list[Any] = [len(works), time.perf_counter(), None, None]
        _groups.append(group)
        token = _group.set(group)
        try:
            return run_group(store, works, ran)
        finally:
            group[2] = time.perf_counter()
            _group.reset(token)

    return timed_run_group


def _wrap_commit(commit: Callable[[Group], None]) -> Callable[[Group], None]:
    def timed_commit(group: Group) -> None:
        start = time.perf_counter()
        try:
            commit(group)
        finally:
            record = _group.get()
            if record is not None:
                record[3] = time.perf_counter() - start

    return timed_commit


def _wrap_wait(wait: Callable[..., Any]) -> Callable[..., Any]:
    def timed_wait(conn: LoopWaitingConnection, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return wait(conn, *args, **kwargs)
        finally:
            _waited.set(_waited.get() + time.perf_counter() - start)

    return timed_wait


def _write(path: Path) -> None:
    path.write_text(json.dumps({"calls": _calls, "groups": _groups}))


def instrument(out: Path) -> None:
    """Wrap the group path's functions, and write the records to `out` at exit."""
    threads._together = _wrap_together(threads._together)  # type: ignore[assignment]
    PostgresStore._run_group = _wrap_run_group(PostgresStore._run_group)  # type: ignore[method-assign]
    Group.commit = _wrap_commit(Group.commit)  # type: ignore[method-assign,assignment]
    LoopWaitingConnection.wait = _wrap_wait(LoopWaitingConnection.wait)  # type: ignore[method-assign]
    atexit.register(_write, out)


if __name__ == "__main__":
    instrument(Path(os.environ[OUT]))
    main()
