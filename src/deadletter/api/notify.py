"""Wake-ups for long polls: a receive that found nothing waits here instead of polling.

The engine calls `messages_available` after a commit (in a worker thread), and so does the
store when another process made messages available (PostgreSQL LISTEN/NOTIFY), while a
waiter here asks it to (`OtherProcesses`). Waiters are asyncio events on the server's loop,
set thread-safely.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import defaultdict
from collections.abc import AsyncIterator
from concurrent.futures import Future
from contextlib import asynccontextmanager
from typing import Protocol

from deadletter.engine import EngineListener

Key = tuple[str, str]
# Announcements are counted in this many slots, each shared by the queues whose key hashes
# there: bounded memory, and a count that moves for another queue only costs a claim.
COUNT_SLOTS = 1024
# How long a waiter waits for the store to start hearing other processes before it waits
# anyway (its queue's own wait then bounds how late a wake-up can be).
HEAR_WAIT = 1.0


class OtherProcesses(Protocol):
    """Where other processes' sends are heard from (`Engine.hear_other_processes`)."""

    def hear_other_processes(self) -> Future[None] | None: ...

    def stop_hearing_other_processes(self) -> None: ...


class Notifier(EngineListener):
    def __init__(self, others: OtherProcesses | None = None) -> None:
        """`others`: the engine, asked to hear other processes' sends while anything waits
        here (None: this process's sends only)."""
        self._others = others
        self._lock = threading.Lock()
        self._waiters: dict[Key, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = (
            defaultdict(set)
        )
        self._counts = [0] * COUNT_SLOTS

    def messages_available(self, project: str, queue: str) -> None:
        key = (project, queue)
        with self._lock:
            self._counts[hash(key) % COUNT_SLOTS] += 1
            waiters = list(self._waiters.get(key, ()))
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)

    def announcements(self, project: str, queue: str) -> int:
        """A count that moves whenever `queue` gets messages (and at times when another queue
        does): a receive that found nothing, and watches only then, compares it with the count
        from before its look to know whether it may have missed an announcement."""
        return self._counts[hash((project, queue)) % COUNT_SLOTS]

    def waiting(self, project: str, queue: str) -> int:
        """How many long polls wait on `queue` now."""
        with self._lock:
            return len(self._waiters.get((project, queue), ()))

    def waiting_total(self) -> int:
        """How many long polls wait now, on every queue."""
        with self._lock:
            return sum(len(w) for w in self._waiters.values())

    @asynccontextmanager
    async def watching(self, project: str, queue: str) -> AsyncIterator[asyncio.Event]:
        """An event set whenever `queue` gets messages while the block runs.

        A message that arrives between a look at the queue and this watch is not announced
        here: compare `announcements` from before the look, or look again once watching.
        """
        entry = (asyncio.get_running_loop(), asyncio.Event())
        key = (project, queue)
        with self._lock:
            self._waiters[key].add(entry)
        heard = self._others.hear_other_processes() if self._others else None
        try:
            if heard is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.wrap_future(heard), HEAR_WAIT)
                # Another process's send from before went unannounced: announce it now.
                self.messages_available(project, queue)
            yield entry[1]
        finally:
            if self._others:
                self._others.stop_hearing_other_processes()
            with self._lock:
                self._waiters[key].discard(entry)
                if not self._waiters[key]:
                    del self._waiters[key]


async def wait_for(event: asyncio.Event, timeout: float) -> bool:
    """True when `event` was set within `timeout` seconds; the event is cleared for reuse."""
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return False
    event.clear()
    return True
