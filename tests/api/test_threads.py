"""The faces' worker threads (`deadletter.api.threads`): a call's result or exception comes
back to its caller, in the caller's context, and no call waits behind another while a thread
could be started (on SQLite, requests waiting together for the store share one commit)."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from deadletter.api.threads import in_thread

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def test_results_exceptions_and_context_reach_the_caller() -> None:
    def fail() -> None:
        raise KeyError("gone")

    async def calls() -> tuple[int, str, str]:
        WHO.set("caller")
        total = await in_thread(sum, [1, 2, 3])
        with pytest.raises(KeyError, match="gone"):
            await in_thread(fail)
        return total, await in_thread(WHO.get), threading.current_thread().name

    total, who, caller_thread = asyncio.run(calls())
    assert (total, who) == (6, "caller")
    assert caller_thread == threading.main_thread().name


@pytest.mark.parametrize("waiting", [1, 2, 5, 20])
def test_calls_waiting_together_each_get_a_thread(waiting: int) -> None:
    # Given `waiting` calls that each block until all of them have started
    started = threading.Barrier(waiting, timeout=30)

    def meet() -> int:
        return started.wait()  # raises BrokenBarrierError if one of them never runs

    async def calls() -> list[int]:
        return list(await asyncio.gather(*(in_thread(meet) for _ in range(waiting))))

    # I expect them all to run at once: none waits in the queue behind another
    assert sorted(asyncio.run(calls())) == list(range(waiting))
