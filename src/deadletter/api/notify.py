"""Wake-ups for long polls: a receive that found nothing waits here instead of polling.

The engine calls `messages_available` after a commit (in a worker thread), and so does the
store when another process made messages available (PostgreSQL LISTEN/NOTIFY), while a
waiter here asks it to (`OtherProcesses`). Waiters are asyncio events on the server's loop,
set thread-safely.

Two kinds of waiter. A watcher (`watching`: a WebSocket subscription that pushes what a
queue gets) must see every message, so every announcement wakes every watcher. Long polls
(`competing`) compete for the same messages, and one claim takes what a send made
available: an announcement wakes only the long poll that has waited longest, and a long
poll that took messages wakes the next one as it leaves, since more may be left. Only the
first in line looks for what no one announces (a message whose visibility timeout ends, a
change another process made unheard); leaving, it wakes the next to take its place. Woken all
at once, N long polls on a queue made N claims for each send, N - 1 of them finding
nothing: 300 long polls cost the server 32 ms of CPU a message where one cost 2.6
(`./dev bench long_polls`), the other projects' requests waiting meanwhile.
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
        # Each queue's long polls, a line for each consumer tag (None: the queue's own
        # consumers), each line in the order its long polls started waiting (a dict keeps
        # it): a send is every tag's to receive.
        self._lines: dict[Key, dict[str | None, dict[Turn, None]]] = defaultdict(dict)
        self._counts = [0] * COUNT_SLOTS

    def messages_available(self, project: str, queue: str) -> None:
        key = (project, queue)
        with self._lock:
            self._counts[hash(key) % COUNT_SLOTS] += 1
            waiters = list(self._waiters.get(key, ()))
            turns = [_wake_next(line) for line in self._lines.get(key, {}).values()]
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)
        for turn in turns:
            if turn is not None:
                turn.ring()

    def announcements(self, project: str, queue: str) -> int:
        """A count that moves whenever `queue` gets messages (and at times when another queue
        does): a receive that found nothing, and watches only then, compares it with the count
        from before its look to know whether it may have missed an announcement."""
        return self._counts[hash((project, queue)) % COUNT_SLOTS]

    def waiting(self, project: str, queue: str) -> int:
        """How many long polls and watchers wait on `queue` now."""
        key = (project, queue)
        with self._lock:
            turns = sum(len(line) for line in self._lines.get(key, {}).values())
            return len(self._waiters.get(key, ())) + turns

    def waiting_total(self) -> int:
        """How many long polls and watchers wait now, on every queue."""
        with self._lock:
            watchers = sum(len(w) for w in self._waiters.values())
            lines = (line for by_tag in self._lines.values() for line in by_tag.values())
            return watchers + sum(len(line) for line in lines)

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
            async with self._hearing(project, queue):
                yield entry[1]
        finally:
            with self._lock:
                self._waiters[key].discard(entry)
                if not self._waiters[key]:
                    del self._waiters[key]

    @asynccontextmanager
    async def competing(
        self, project: str, queue: str, tag: str | None = None
    ) -> AsyncIterator[Turn]:
        """A long poll's turn among those on `queue` (for consumer tag `tag`) while the block
        runs: `Turn.wait` returns once an announcement reached it. Set `Turn.took` when a
        claim took messages: leaving, the turn then wakes the next long poll, as it does when
        it leaves with a wake-up it never waited for. As for `watching`, compare
        `announcements` from before the look."""
        key = (project, queue)
        with self._lock:
            line = self._lines[key].setdefault(tag, {})
            turn = Turn(asyncio.get_running_loop(), self._lock, line)
            line[turn] = None
        try:
            async with self._hearing(project, queue) as started:
                if started:  # announced to everyone, and to this turn whatever its place
                    with self._lock:
                        turn.woken = True
                    turn.event.set()
                yield turn
        finally:
            with self._lock:
                following = self._leave(key, tag, turn)
            if following is not None:
                following.ring()

    def _leave(self, key: Key, tag: str | None, turn: Turn) -> Turn | None:
        """`turn` out of line; the turn to wake for it, if any: the next not woken when more
        may be left (it took messages, or never waited for its wake-up), else the new first
        in line when it was first (only the first looks for what no one announces). Called
        with the lock held."""
        lines = self._lines[key]
        line = lines[tag]
        was_first = next(iter(line)) is turn
        del line[turn]
        if not line:
            del lines[tag]
            if not lines:
                del self._lines[key]
        if turn.took or turn.woken or (was_first and line and not next(iter(line)).woken):
            return _wake_next(line)
        return None

    @asynccontextmanager
    async def _hearing(self, project: str, queue: str) -> AsyncIterator[bool]:
        """Other processes' sends heard while the block runs; True when the hearing had to
        start for it, and what another process sent before then was announced (to no one
        while it was not heard)."""
        heard = self._others.hear_other_processes() if self._others else None
        try:
            if heard is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.wrap_future(heard), HEAR_WAIT)
                # Another process's send from before went unannounced: announce it now.
                self.messages_available(project, queue)
            yield heard is not None
        finally:
            if self._others:
                self._others.stop_hearing_other_processes()


def _wake_next(line: dict[Turn, None]) -> Turn | None:
    """The turn of `line` that has waited longest and is not woken yet, now woken; None when
    every one is. Called with the notifier's lock held."""
    for turn in line:
        if not turn.woken:
            turn.woken = True
            return turn
    return None


class Turn:
    """A long poll's place in line for one queue's announcements (`Notifier.competing`)."""

    __slots__ = ("_line", "_lock", "event", "loop", "took", "woken")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, lock: threading.Lock, line: dict[Turn, None]
    ) -> None:
        self.loop = loop
        self._lock = lock  # the notifier's
        self._line = line  # its queue's turns, in order
        self.event = asyncio.Event()
        # An announcement reached this turn and it has not waited for it yet (under the lock).
        self.woken = False
        # A claim of this long poll took messages: more may be left for the next one.
        self.took = False

    def ring(self) -> None:
        """Reach this turn's wait, from any thread (`woken` is set under the lock first)."""
        self.loop.call_soon_threadsafe(self.event.set)

    @property
    def first(self) -> bool:
        """Whether this turn has waited longest of its queue's."""
        with self._lock:
            return next(iter(self._line), None) is self

    async def wait(self, timeout: float) -> bool:
        """True when an announcement reached this turn within `timeout` seconds (at once
        for one that came since the last wait); then ready for the next."""
        if not await wait_for(self.event, timeout):
            return False
        with self._lock:
            self.woken = False
        return True


async def wait_for(event: asyncio.Event, timeout: float) -> bool:
    """True when `event` was set within `timeout` seconds; the event is cleared for reuse."""
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return False
    event.clear()
    return True
