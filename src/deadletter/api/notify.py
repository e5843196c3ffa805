"""Wake-ups for long polls: a receive that found nothing waits here instead of polling.

The engine calls `messages_available` after a commit (in a worker thread), and so does the
store when another process made messages available (PostgreSQL LISTEN/NOTIFY). Waiters are
asyncio events on the server's loop, set thread-safely.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from deadletter.engine import EngineListener

Key = tuple[str, str]
# Announcements are counted in this many slots, each shared by the queues whose key hashes
# there: bounded memory, and a count that moves for another queue only costs a claim.
COUNT_SLOTS = 1024


class Notifier(EngineListener):
    def __init__(self) -> None:
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
        try:
            yield entry[1]
        finally:
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
