"""Group commit on PostgreSQL (`storage/postgres/group.py`): the hot calls queued at once run
in one transaction on the event loop's thread, which serves others while the group waits for
PostgreSQL (`storage/postgres/on_loop.py`), one BEGIN and one COMMIT for all; a call
that fails after it wrote sends the group's calls back to run alone, none lost or doubled; a
deadlock between two groups is broken and both groups' calls still commit, once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from typing import Any

import pytest
import uvloop

from deadletter.api.threads import on_loop
from deadletter.clock import ManualClock
from deadletter.domain.errors import QueueNotFound
from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from deadletter.storage.postgres import backend
from deadletter.storage.postgres.backend import PostgresStore
from deadletter.storage.postgres.on_loop import LoopWaitingConnection
from deadletter.storage.postgres.on_loop import on_loop as running_on_loop
from tests.storage.test_postgres_statement_counts import Wire

P = "p"

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.parametrize("store_url", ["postgres"], indirect=True),
]


@pytest.fixture
def wired(store_url: str) -> Iterator[tuple[Engine, Wire]]:
    store = PostgresStore(store_url, pool_size=1)  # one connection: every call on one trace
    wire = Wire(store)
    try:
        engine = Engine(store, ManualClock())
        engine.create_queue(P, "q")
        yield engine, wire
    finally:
        store.close()
        wire.close()


def _one(body: str) -> list[NewMessage]:
    return [NewMessage(body=body.encode())]


def _bodies(engine: Engine) -> list[bytes]:
    claim = engine.claim(P, "q", limit=20, ttl=60)
    return sorted(m.body for m in claim.messages)


def _in_one_group(engine: Engine, works: list[Callable[[], Any]]) -> list[Any]:
    """Each of `works` through `on_loop`, all queued in one turn of the loop, before the
    group's runner starts, so that they make one group; what each returned, or raised."""

    async def scenario() -> list[Any]:
        calls = [asyncio.ensure_future(on_loop(engine, work)) for work in works]
        return await asyncio.gather(*calls, return_exceptions=True)

    return asyncio.run(scenario())


async def _ticking_while(call: Awaitable[Any]) -> tuple[Any, int]:
    """`call`'s result, and how many times a coroutine beside it woke every 10 ms."""
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.ensure_future(tick())
    try:
        return await call, ticks
    finally:
        ticker.cancel()


def _sleep_in_transaction(engine: Engine, seconds: float) -> str:
    with engine.store.transaction() as tx:
        tx.run("SELECT pg_sleep(:s)", {"s": seconds})  # type: ignore[attr-defined]
    return threading.current_thread().name


def test_a_group_waits_for_postgresql_through_the_loop(wired: tuple[Engine, Wire]) -> None:
    # Given a call whose statement takes PostgreSQL 0.3 s
    engine, _ = wired
    call = partial(_sleep_in_transaction, engine, 0.3)
    # When it runs in a group, beside a coroutine that wakes every 10 ms
    thread, ticks = asyncio.run(_ticking_while(on_loop(engine, call)))
    # I expect it to have run on the loop's thread, and the loop to have served the other
    # coroutine meanwhile
    assert thread == threading.current_thread().name
    assert ticks >= 10


class _CountingLoop(asyncio.SelectorEventLoop):
    """A loop that counts the readers put on it, and knows which it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.readers_added = 0

    def add_reader(self, fd: Any, callback: Any, *args: Any) -> None:
        self.readers_added += 1
        super().add_reader(fd, callback, *args)

    def watched(self) -> list[int]:
        return [key.fd for key in self._selector.get_map().values() if key.events & 1]


def _on_counting_loop(scenario: Callable[[], Awaitable[Any]]) -> tuple[Any, _CountingLoop]:
    loop = _CountingLoop()
    try:
        result = loop.run_until_complete(scenario())
        return result, loop
    finally:
        loop.close()


def test_a_group_waits_on_its_socket_with_one_reader_that_goes_with_it(
    wired: tuple[Engine, Wire],
) -> None:
    # Given eight sends in one group, each waiting for PostgreSQL's replies
    engine, _ = wired
    sends = [lambda i=i: engine.send(P, "q", messages=_one(f"m{i}")) for i in range(8)]

    async def scenario() -> tuple[list[Any], list[int]]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, _CountingLoop)
        before = loop.watched()
        calls = [asyncio.ensure_future(on_loop(engine, work)) for work in sends]
        results = await asyncio.gather(*calls, return_exceptions=True)
        return results, [fd for fd in loop.watched() if fd not in before]

    (results, left), loop = _on_counting_loop(scenario)
    # I expect them all sent, the loop to have put one reader on the connection's socket for
    # the group's every wait (not one a wait), and none left once the group ended
    assert not [r for r in results if isinstance(r, BaseException)]
    assert loop.readers_added == 1
    assert left == []
    assert _bodies(engine) == sorted(f"m{i}".encode() for i in range(8))


def test_work_on_the_loop_cancelled_while_it_waits_ends_there_and_leaves_no_reader(
    wired: tuple[Engine, Wire],
) -> None:
    # Given work on the loop waiting for a statement that takes PostgreSQL 5 s (as a group's
    # runner does while the server shuts down)
    engine, _ = wired
    store = engine.store
    assert isinstance(store, PostgresStore)
    reached: list[str] = []

    def work() -> None:
        with store._pool.connection() as conn:
            try:
                conn.execute("SELECT pg_sleep(5)")
            except BaseException as exc:
                reached.append(type(exc).__name__)
                raise

    async def scenario() -> tuple[BaseException | None, float, list[int]]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, _CountingLoop)
        before = loop.watched()
        task = asyncio.ensure_future(running_on_loop(work))
        await asyncio.sleep(0.2)
        # When it is cancelled
        start = loop.time()
        task.cancel()
        error: BaseException | None = None
        try:
            await task
        except BaseException as exc:
            error = exc
        return error, loop.time() - start, [fd for fd in loop.watched() if fd not in before]

    (error, took, left), _ = _on_counting_loop(scenario)
    # I expect the cancellation raised in the work where it waited and then to its caller, at
    # once, no reader left on the loop, and the store usable again
    assert reached == ["CancelledError"]
    assert isinstance(error, asyncio.CancelledError)
    assert took < 1.0
    assert left == []
    engine.send(P, "q", messages=_one("after"))
    assert _bodies(engine) == [b"after"]


def test_work_on_the_loop_that_closes_a_connection_waits_on_the_next_one_given_its_socket(
    store_url: str,
) -> None:
    # Given work on the server's loop (uvloop) that waits on a connection, closes it, and
    # opens another, which the system gives the closed one's socket number
    sockets: list[int] = []

    def work() -> str:
        first = LoopWaitingConnection.connect(store_url, autocommit=True)
        first.execute("SELECT 1")
        sockets.append(first.fileno())
        first.close()
        with LoopWaitingConnection.connect(store_url, autocommit=True) as second:
            sockets.append(second.fileno())
            row = second.execute("SELECT 'answered'").fetchone()
        return str(row[0]) if row else ""

    async def scenario() -> str:
        return await asyncio.wait_for(running_on_loop(work), timeout=5)

    # When it waits on the second connection
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        answer = runner.run(scenario())
    # I expect the same socket number, and the reply heard: the loop watches the new socket,
    # not the closed one's registration
    assert sockets[0] == sockets[1]
    assert answer == "answered"


def test_a_group_with_no_free_connection_runs_its_calls_alone_and_the_loop_goes_on(
    wired: tuple[Engine, Wire],
) -> None:
    # Given the store's one connection held elsewhere for 0.3 s
    engine, _ = wired
    store = engine.store
    assert isinstance(store, PostgresStore)
    held = store._pool.getconn()
    threading.Timer(0.3, store._pool.putconn, args=(held,)).start()
    # When a call comes, beside a coroutine that wakes every 10 ms
    call = partial(_sleep_in_transaction, engine, 0.0)
    thread, ticks = asyncio.run(_ticking_while(on_loop(engine, call)))
    # I expect the call run alone on a worker thread, which waited for the connection, and
    # the loop to have gone on meanwhile
    assert thread == "deadletter-api"
    assert ticks >= 10


def test_sends_queued_together_share_one_begin_and_one_commit(
    wired: tuple[Engine, Wire],
) -> None:
    # Given eight sends queued while the group thread is busy
    engine, wire = wired
    sends = [lambda i=i: engine.send(P, "q", messages=_one(f"m{i}")) for i in range(8)]
    # When they run
    sent, results = wire.sent(lambda: _in_one_group(engine, sends))
    # I expect one BEGIN and one COMMIT for the eight, the queue's row read once, each
    # send's own statement, and every message stored once
    assert not [r for r in results if isinstance(r, BaseException)]
    assert sent.frame == 2
    assert sent.statements == 1 + 8
    assert _bodies(engine) == sorted(f"m{i}".encode() for i in range(8))


def test_a_call_that_fails_after_it_wrote_sends_the_group_back_to_run_alone(
    wired: tuple[Engine, Wire],
) -> None:
    # Given two sends queued together with a call that deletes the project's messages and
    # then fails, inside its transaction
    engine, wire = wired
    ran: list[tuple[str, str]] = []

    def send(body: str) -> Callable[[], Any]:
        def work() -> Any:
            ran.append((body, threading.current_thread().name))
            return engine.send(P, "q", messages=_one(body))

        return work

    def wipe_then_fail() -> None:
        ran.append(("wipe", threading.current_thread().name))
        with engine.store.transaction() as tx:
            tx.run("DELETE FROM messages WHERE project = :p", {"p": P})  # type: ignore[attr-defined]
            raise ValueError("failed after a write")

    # When they run
    sent, results = wire.sent(lambda: _in_one_group(engine, [send("a"), wipe_then_fail, send("b")]))
    # I expect the failing call answered its error, and each send stored exactly once: the
    # group rolled back (the wipe of "a" with it), then each call ran again alone on a worker
    # thread
    assert isinstance(results[1], ValueError)
    assert _bodies(engine) == [b"a", b"b"]
    loop_thread = threading.current_thread().name  # the group's, running the loop
    assert ran[:2] == [("a", loop_thread), ("wipe", loop_thread)]
    assert sorted(name for name, _ in ran[2:]) == ["a", "b", "wipe"]
    assert {thread for _, thread in ran[2:]} == {"deadletter-api"}
    # and only the three transactions of their own committed
    assert sent.frame == 1 + 3 + 2  # the group's BEGIN; three BEGINs and two COMMITs alone


def test_a_call_refused_before_it_wrote_leaves_the_group_going(
    wired: tuple[Engine, Wire],
) -> None:
    # Given two sends queued together with a send to a queue that does not exist (it reads
    # the queue's row, then is refused)
    engine, wire = wired
    works = [
        lambda: engine.send(P, "q", messages=_one("a")),
        lambda: engine.send(P, "missing", messages=_one("x")),
        lambda: engine.send(P, "q", messages=_one("b")),
    ]
    # When they run
    sent, results = wire.sent(lambda: _in_one_group(engine, works))
    # I expect the refusal answered, and the three in one transaction: one BEGIN, one COMMIT
    assert isinstance(results[1], QueueNotFound)
    assert sent.frame == 2
    assert _bodies(engine) == [b"a", b"b"]


def _claimed_ids(engine: Engine, queue: str, bodies: str) -> list[str]:
    for body in bodies:
        engine.send(P, queue, messages=_one(body))
    return [m.id for m in engine.claim(P, queue, limit=len(bodies), ttl=60).messages]


def test_the_counters_of_a_group_are_written_once_with_its_commit(
    wired: tuple[Engine, Wire],
) -> None:
    # Given claimed messages in two queues
    engine, wire = wired
    engine.create_queue(P, "other")
    first, second = _claimed_ids(engine, "q", "ab"), _claimed_ids(engine, "q", "cde")
    elsewhere = _claimed_ids(engine, "other", "f")
    # When three acknowledgements run in one group
    works = [
        lambda: engine.delete_messages(P, "q", ids=first),
        lambda: engine.delete_messages(P, "other", ids=elsewhere),
        lambda: engine.delete_messages(P, "q", ids=second),
    ]
    sent, _ = wire.sent(lambda: _in_one_group(engine, works))
    # I expect each queue's row read once, each call to send its delete, and the counters
    # of all three to go in one statement with the group's COMMIT
    assert (sent.statements, sent.frame, sent.round_trips) == (2 + 3 + 1, 2, 2 + 3 + 1)
    assert engine.stats(P, "q").acknowledged == 5
    assert engine.stats(P, "other").acknowledged == 1


def test_a_statement_that_reads_the_counters_sees_the_group_s_bumps_written(
    wired: tuple[Engine, Wire],
) -> None:
    # Given claimed messages of a queue
    engine, _ = wired
    ids = _claimed_ids(engine, "q", "ab")
    # When one call of a group acknowledges them and the next deletes the queue (its
    # counters with it)
    works = [lambda: engine.delete_messages(P, "q", ids=ids), lambda: engine.delete_queue(P, "q")]
    _in_one_group(engine, works)
    # I expect no counter of the queue left: the bump was written before the delete of the
    # counters, not after it with the COMMIT
    with engine.store.read() as tx:
        left = tx.one(  # type: ignore[attr-defined]
            "SELECT count(*) AS n FROM counters WHERE project = :p AND queue = 'q'", {"p": P}
        )
    assert left["n"] == 0


def test_a_queue_changed_in_a_group_is_read_again_by_the_calls_after(
    wired: tuple[Engine, Wire],
) -> None:
    # Given a send, the queue's deletion and another send queued together (the first read
    # the queue's row for the group)
    engine, _ = wired
    works = [
        lambda: engine.send(P, "q", messages=_one("a")),
        lambda: engine.delete_queue(P, "q"),
        lambda: engine.send(P, "q", messages=_one("b")),
    ]
    # When they run
    results = _in_one_group(engine, works)
    # I expect the last send refused, its queue gone, and no message left behind
    assert isinstance(results[2], QueueNotFound)
    engine.create_queue(P, "q")
    assert _bodies(engine) == []


def test_a_queue_made_again_starts_without_what_a_late_call_left(
    wired: tuple[Engine, Wire],
) -> None:
    # Given a queue's row deleted by another process while calls that had read it went on:
    # a message they sent, one they acknowledged (counted), after the delete
    engine, _ = wired
    acknowledged = _claimed_ids(engine, "q", "a")
    engine.delete_messages(P, "q", ids=acknowledged)
    engine.send(P, "q", messages=_one("late"))
    with engine.store.transaction() as tx:
        tx.run("DELETE FROM queues WHERE project = :p AND name = 'q'", {"p": P})  # type: ignore[attr-defined]
    # When the queue is made again
    engine.create_queue(P, "q")
    # I expect it empty, counting nothing
    stats = engine.stats(P, "q")
    assert (stats.total, stats.acknowledged) == (0, 0)
    assert _bodies(engine) == []


def test_events_are_told_after_the_group_commit_even_when_the_caller_has_gone(
    wired: tuple[Engine, Wire],
) -> None:
    # Given a listener that reads, in a transaction of its own, what each send it hears of
    # stored
    engine, _ = wired
    seen: list[int] = []

    class Listener(EngineListener):
        def sent(self, project: str, queue: str, count: int) -> None:
            seen.append(engine.stats(project, queue).total)

    engine.add_listener(Listener())

    async def gone() -> None:
        task = asyncio.ensure_future(on_loop(engine, engine.send, P, "q", messages=_one("x")))
        await asyncio.sleep(0)  # queued for the group thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(500):  # the group's commit, then its news on the loop
            if seen:
                break
            await asyncio.sleep(0.01)

    # When a send's caller goes away before its group has committed
    asyncio.run(gone())
    # I expect the listener told once, after the commit: it read the message stored
    assert seen == [1]


def _answer(works: list[Callable[[], Any]], outcomes: list[Any]) -> None:
    """Each work's result, the ones handed back run again alone (as `on_loop` does)."""
    for work, done in zip(works, outcomes, strict=True):
        if done is None:
            work()
        else:
            done.result()


def test_two_groups_that_take_counter_rows_in_turn_both_commit_once(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two stores (two processes) whose connections write the same shard of the counts
    monkeypatch.setattr(backend, "_next_shard", lambda: 0)
    one, other = PostgresStore(store_url, pool_size=1), PostgresStore(store_url, pool_size=1)
    try:
        setup = Engine(one)
        setup.create_queue(P, "q1")
        setup.create_queue(P, "q2")
        engines = Engine(one), Engine(other)
        both_sent_first = threading.Barrier(2, timeout=5)

        def send(engine: Engine, queue: str, wait: bool) -> Callable[[], Any]:
            def work() -> Any:
                if wait and threading.current_thread().name.startswith("group"):
                    both_sent_first.wait()
                return engine.send(P, queue, messages=_one(queue))

            return work

        # When each group sends to the two queues in the opposite order, the second send of
        # each waiting until both groups have sent their first (each holds a counter row the
        # other's second send needs)
        groups = [
            [send(engines[0], "q1", False), send(engines[0], "q2", True)],
            [send(engines[1], "q2", False), send(engines[1], "q1", True)],
        ]
        outcomes: list[list[Any]] = [[], []]

        def run(i: int) -> None:
            outcomes[i] = engines[i].run_together(groups[i])

        threads = [threading.Thread(target=run, args=(i,), name=f"group-{i}") for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        # I expect PostgreSQL to break the deadlock: one group committed, the other's calls
        # are handed back to run alone, and then commit
        assert sorted(all(o is None for o in group) for group in outcomes) == [False, True]
        for group, outcome in zip(groups, outcomes, strict=True):
            _answer(group, outcome)
        # and each queue holds its two messages, counted once
        for queue in ("q1", "q2"):
            assert setup.stats(P, queue).total == 2
            assert len(setup.claim(P, queue, limit=10, ttl=60).messages) == 2
    finally:
        one.close()
        other.close()
