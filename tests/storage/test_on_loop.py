"""Work run on the event loop's thread (`storage/postgres/on_loop.py`) without a database:
what resumes it."""

from __future__ import annotations

import asyncio

import uvloop

from deadletter.storage.postgres.on_loop import _awaited
from deadletter.storage.postgres.on_loop import on_loop as running_on_loop


def test_work_on_the_loop_resumes_only_with_what_it_awaits_after_a_cancellation() -> None:
    # Given work on the loop awaiting a timer, which goes on after its caller's cancellation
    # reaches it, and then awaits a second one
    def work() -> str:
        try:
            return str(_awaited(asyncio.sleep(0.05, result="first")))
        except asyncio.CancelledError:
            return str(_awaited(asyncio.sleep(0.3, result="second")))

    async def scenario() -> str:
        task = asyncio.ensure_future(running_on_loop(work))
        await asyncio.sleep(0.01)
        task.cancel()  # When its caller is cancelled before the first timer is due
        return await task

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        answer = runner.run(scenario())
    # I expect the work resumed by the second timer, the first given up, not by the first
    assert answer == "second"
