"""Work run on the event loop's thread (`storage/postgres/on_loop.py`) without a database:
what resumes it."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Generator

import uvloop
from psycopg.waiting import READY_R, WAIT_R

from deadletter.storage.postgres.on_loop import SWEEP_SECONDS, _awaited, _wait_on_loop
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


class _Socketed:
    """What `_wait_on_loop` reads of a connection: its socket's number."""

    def __init__(self, fileno: int) -> None:
        self.pgconn = self
        self.socket = fileno


def test_work_whose_reader_the_loop_lost_is_resumed_once_its_socket_is_readable() -> None:
    ours, peer = socket.socketpair()

    def reply() -> Generator[int, int, bytes]:
        """psycopg's way: ask to read, then read once told the socket is ready."""
        ready = yield WAIT_R
        assert ready & READY_R
        return ours.recv(16)

    def work() -> bytes:
        return bytes(_wait_on_loop(reply(), _Socketed(ours.fileno())))  # type: ignore[arg-type]

    async def scenario() -> bytes:
        task = asyncio.ensure_future(running_on_loop(work))
        await asyncio.sleep(0.05)
        # Given work waiting for its socket, whose reader the loop loses (as uvloop does for
        # a socket given the number of one closed while watched)
        asyncio.get_running_loop().remove_reader(ours.fileno())
        # when the reply comes,
        peer.send(b"reply")
        # I expect the work resumed with it all the same, within a few looks.
        return await asyncio.wait_for(task, 4 * SWEEP_SECONDS + 1)

    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            assert runner.run(scenario()) == b"reply"
    finally:
        ours.close()
        peer.close()
