"""Long polls compete for a queue's messages: an announcement wakes the one that has waited
longest, and it wakes the next when it took messages or leaves with a wake-up unused;
watchers (WebSocket pushes) are each woken by every announcement (`api/notify.py`)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deadletter.api.notify import Notifier, Turn

P, Q = "p", "orders"
SOON = 0.05  # long enough for a wake-up scheduled on the loop to arrive


async def _woken(turns: list[Turn]) -> list[bool]:
    """Which of `turns` an announcement reached, each waited for at most SOON."""
    return list(await asyncio.gather(*(t.wait(SOON) for t in turns)))


async def _in_line(stack: AsyncExitStack, notifier: Notifier, count: int) -> list[Turn]:
    return [await stack.enter_async_context(notifier.competing(P, Q)) for _ in range(count)]


@settings(max_examples=25, deadline=None)
@given(waiting=st.integers(1, 12), announced=st.integers(0, 15))
def test_each_announcement_wakes_one_more_long_poll_in_the_order_they_came(
    waiting: int, announced: int
) -> None:
    notifier = Notifier()

    async def run() -> list[bool]:
        async with AsyncExitStack() as stack:
            turns = await _in_line(stack, notifier, waiting)
            for _ in range(announced):
                notifier.messages_available(P, Q)
            return await _woken(turns)

    woken = asyncio.run(run())
    # I expect as many woken as announcements, at most all, the longest waiting first
    count = min(waiting, announced)
    assert woken == [True] * count + [False] * (waiting - count)


@pytest.mark.parametrize(
    ("waits", "took", "next_woken"),
    [(True, True, True), (True, False, False), (False, False, True)],
    ids=["took-messages", "found-nothing", "left-before-waiting-for-it"],
)
def test_a_long_poll_leaving_wakes_the_next_when_more_may_be_left(
    waits: bool, took: bool, next_woken: bool
) -> None:
    # Given three long polls in line and one announcement, which reaches the first
    notifier = Notifier()

    async def run() -> list[bool]:
        async with AsyncExitStack() as stack:
            async with notifier.competing(P, Q) as first:
                rest = await _in_line(stack, notifier, 2)
                notifier.messages_available(P, Q)
                if waits:
                    assert await first.wait(SOON)
                else:  # its time ran out as the wake-up came
                    await asyncio.sleep(SOON)
                first.took = took  # what its claim then took
            # When it leaves, I expect the next in line woken if more may be left (it took
            # messages, or never used its wake-up), and never the one after
            return await _woken(rest)

    assert asyncio.run(run()) == [next_woken, False]


def test_every_watcher_sees_every_announcement_while_long_polls_get_one() -> None:
    notifier = Notifier()

    async def run() -> tuple[list[bool], list[bool]]:
        async with AsyncExitStack() as stack:
            events = [await stack.enter_async_context(notifier.watching(P, Q)) for _ in range(3)]
            turns = await _in_line(stack, notifier, 3)
            assert notifier.waiting(P, Q) == 6
            notifier.messages_available(P, Q)
            await asyncio.sleep(SOON)
            return [e.is_set() for e in events], await _woken(turns)

    watched, woken = asyncio.run(run())
    assert watched == [True] * 3
    assert woken == [True, False, False]
    assert notifier.waiting(P, Q) == 0


def test_another_queues_announcement_wakes_no_long_poll_of_this_one() -> None:
    notifier = Notifier()

    async def run() -> list[bool]:
        async with AsyncExitStack() as stack:
            turns = await _in_line(stack, notifier, 2)
            notifier.messages_available(P, "other")
            notifier.messages_available("other-project", Q)
            return await _woken(turns)

    assert asyncio.run(run()) == [False, False]
