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
    # Given four long polls in line and two announcements, which reach the first two
    notifier = Notifier()

    async def run() -> list[bool]:
        async with AsyncExitStack() as stack:
            (head,) = await _in_line(stack, notifier, 1)
            async with notifier.competing(P, Q) as second:
                rest = await _in_line(stack, notifier, 2)
                notifier.messages_available(P, Q)
                notifier.messages_available(P, Q)
                if waits:
                    assert await second.wait(SOON)
                else:  # its time ran out as the wake-up came
                    await asyncio.sleep(SOON)
                second.took = took  # what its claim then took
            # When the second leaves, I expect the next in line woken if more may be left
            # (it took messages, or never used its wake-up), and never the one after
            return [await head.wait(SOON), *await _woken(rest)]

    assert asyncio.run(run()) == [True, next_woken, False]


def test_the_first_in_line_leaving_wakes_the_next_to_look_in_its_place() -> None:
    # Only the first in line looks for what no one announces (a visibility timeout ending)
    notifier = Notifier()

    async def run() -> tuple[list[bool], list[bool]]:
        async with AsyncExitStack() as stack:
            async with notifier.competing(P, Q) as first:
                rest = await _in_line(stack, notifier, 2)
                before = [first.first, *(t.first for t in rest)]
            # When it leaves, woken by nothing and having taken nothing
            return before, [rest[0].first, *await _woken(rest)]

    before, after = asyncio.run(run())
    assert before == [True, False, False]
    # I expect the next first in line, and woken to look; the one after left waiting
    assert after == [True, True, False]


def test_each_consumer_tag_has_its_own_line() -> None:
    # Given long polls of the queue's own consumers and of two consumer tags, interleaved
    notifier = Notifier()

    async def run() -> list[bool]:
        async with AsyncExitStack() as stack:
            turns = [
                await stack.enter_async_context(notifier.competing(P, Q, tag))
                for tag in (None, "billing", "shipping", None, "billing", "shipping")
            ]
            assert [t.first for t in turns] == [True] * 3 + [False] * 3
            # When one message is sent (every tag's to receive)
            notifier.messages_available(P, Q)
            return await _woken(turns)

    # I expect the first of every line woken, and no other
    assert asyncio.run(run()) == [True] * 3 + [False] * 3


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
