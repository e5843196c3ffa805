"""Groups of hot calls take turns on the loop (`api/threads._Groups`): one group runs its
calls at a time, and a second only while at least `SECOND_TURN_AT` calls wait; never more
than `TURNS`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from deadletter.api import threads
from deadletter.api.threads import on_loop


class _Done:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class _Engine:
    """An engine whose groups run until the test lets them (`release`)."""

    runs_now = False
    runs_together = True

    def __init__(self) -> None:
        self.running: list[int] = []  # the size of each group running its calls now
        self.most = 0
        self.release = asyncio.Event()

    async def run_together_on_loop(
        self, works: Sequence[Callable[[], Any]], *, ran: Callable[[], None]
    ) -> list[_Done]:
        self.running.append(len(works))
        self.most = max(self.most, len(self.running))
        await self.release.wait()
        self.running.remove(len(works))
        ran()
        return [_Done(work()) for work in works]


async def _settled() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_second_group_runs_only_while_enough_calls_wait() -> None:
    async def scenario() -> None:
        engine = _Engine()
        # Given a group running one call
        calls = [asyncio.ensure_future(on_loop(engine, lambda: 0))]  # type: ignore[arg-type]
        await _settled()
        assert engine.running == [1]
        # when fewer calls than SECOND_TURN_AT queue behind it, they wait for its turn;
        for i in range(1, threads.SECOND_TURN_AT):
            calls.append(asyncio.ensure_future(on_loop(engine, lambda i=i: i)))  # type: ignore[arg-type]
        await _settled()
        assert engine.running == [1]
        # once SECOND_TURN_AT wait, a second group takes them all at once,
        calls.append(asyncio.ensure_future(on_loop(engine, lambda: -1)))  # type: ignore[arg-type]
        await _settled()
        assert sorted(engine.running) == [1, threads.SECOND_TURN_AT]
        # and no third group starts, however many wait.
        for i in range(2 * threads.SECOND_TURN_AT):
            calls.append(asyncio.ensure_future(on_loop(engine, lambda i=i: i)))  # type: ignore[arg-type]
        await _settled()
        assert len(engine.running) == threads.TURNS == 2
        engine.release.set()
        # Every call is answered with its own result.
        results = await asyncio.gather(*calls)
        assert results[0] == 0 and results[threads.SECOND_TURN_AT] == -1
        assert engine.most == threads.TURNS

    asyncio.run(scenario())
