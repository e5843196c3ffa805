"""A waiter asks the engine to hear other processes' sends while it waits, and the first one,
which had to wait for the hearing to start, looks at its queue again: a send of another
process before then was announced to no one."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import pytest

from deadletter.api import notify
from deadletter.api.notify import Notifier

P, Q = "p", "orders"


class _Others:
    """Other processes as a store sees them: heard once `ready` is done."""

    def __init__(self, ready: Future[None] | None) -> None:
        self.ready = ready
        self.hearing = 0

    def hear_other_processes(self) -> Future[None] | None:
        self.hearing += 1
        return self.ready

    def stop_hearing_other_processes(self) -> None:
        self.hearing -= 1


def _done() -> Future[None]:
    ready: Future[None] = Future()
    ready.set_result(None)
    return ready


@pytest.mark.parametrize(
    ("ready", "looks_again"),
    [(_done(), True), (None, False)],
    ids=["hearing-just-started", "already-heard"],
)
def test_a_waiter_looks_again_only_when_the_hearing_started_for_it(
    ready: Future[None] | None, looks_again: bool
) -> None:
    others = _Others(ready)
    notifier = Notifier(others)
    seen = notifier.announcements(P, Q)

    async def watch() -> None:
        async with notifier.watching(P, Q) as arrived:
            assert others.hearing == 1
            await asyncio.sleep(0)  # an announcement sets the event from the loop
            assert arrived.is_set() is looks_again
            assert (notifier.announcements(P, Q) != seen) is looks_again

    asyncio.run(watch())
    assert others.hearing == 0


def test_a_hearing_that_does_not_start_delays_the_waiter_only_so_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a store whose listener cannot reach the database
    monkeypatch.setattr(notify, "HEAR_WAIT", 0.05)
    never: Future[None] = Future()
    others = _Others(never)
    notifier = Notifier(others)

    # When a waiter starts, I expect it to wait for the hearing only HEAR_WAIT, look again,
    # and give its hearing back when it ends
    async def watch() -> bool:
        async with notifier.watching(P, Q) as arrived:
            await asyncio.sleep(0)
            return arrived.is_set()

    assert asyncio.run(watch())
    assert others.hearing == 0


def test_a_waiter_cancelled_while_the_hearing_starts_gives_it_back() -> None:
    never: Future[None] = Future()
    others = _Others(never)
    notifier = Notifier(others)

    async def wait() -> None:
        async with notifier.watching(P, Q):
            raise AssertionError("the hearing never started")

    async def cancel_it() -> None:
        task = asyncio.create_task(wait())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())
    assert others.hearing == 0
    assert notifier.waiting(P, Q) == 0
