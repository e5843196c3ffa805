"""Writers on PostgreSQL that wait for nothing but their own commit: two transactions of one
process that bump the same queue's counts write different rows (each connection its own
shard), and a write tells other processes of new messages only after its commit, outside the
transaction, so no sending transaction holds the database's notification lock through its
commit."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage.base import NestedTransaction, Store
from deadletter.storage.postgres.backend import POOL_SIZE, PostgresStore
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.transaction import SQLTransaction
from tests.services import postgres_schema

pytestmark = pytest.mark.postgres

P, Q = "p", "orders"
# Every count a write bumps, each with the parameters of one bump.
BUMPS = {
    "depth": (q.ADD_DEPTH, {"project": P, "queue": Q, "source": "", "n": 1}),
    "hidden": (q.ADD_HIDDEN, {"project": P, "queue": Q, "hidden": 2, "n": 1}),
    "counter": (q.BUMP_COUNTER, {"project": P, "queue": Q, "name": "acknowledged", "amount": 1}),
}


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    with postgres_schema() as url:
        s = PostgresStore(url)
        try:
            yield s
        finally:
            s.close()


@pytest.mark.parametrize("count", sorted(BUMPS))
def test_transactions_of_a_process_bump_one_queues_count_without_waiting_for_each_other(
    store: PostgresStore, count: str
) -> None:
    statement, params = BUMPS[count]
    writers = POOL_SIZE  # every connection the process may hold at once
    bumped = threading.Semaphore(0)
    done = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            with store.transaction() as tx:
                assert isinstance(tx, SQLTransaction)
                # (a wait for another's row would end in lock_timeout's error)
                tx.run("SET LOCAL lock_timeout = '5s'", {})
                tx.run(statement, params)
                bumped.release()
                done.wait(60)
        except BaseException as exc:  # the main thread reports it
            errors.append(exc)
            bumped.release()

    # Given as many transactions as the pool holds, each bumping the count and keeping its
    # transaction open until every one has bumped it,
    threads = [threading.Thread(target=write) for _ in range(writers)]
    for t in threads:
        t.start()
    try:
        for _ in range(writers):
            assert bumped.acquire(timeout=60)
    finally:
        done.set()
        for t in threads:
            t.join(60)
    # none waited for another,
    assert not errors, errors
    # and the count reads every bump.
    with store.read() as tx:
        if count == "counter":
            assert tx.counters(P, Q) == {"acknowledged": writers}
        else:
            table = "queue_depths" if count == "depth" else "queue_hidden"
            assert isinstance(tx, SQLTransaction)
            row = tx.one(f"SELECT SUM(n) AS n FROM {table} WHERE queue = :q", {"q": Q})
            assert row is not None and int(row["n"]) == writers


class Recording(PostgresStore):
    """The store, noting whether one of its transactions was open when it was asked to
    notify (a read opened inside a transaction is refused)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.told: list[str] = []

    def notify_messages_available(self, project: str, queue: str) -> None:
        try:
            with self.read():
                self.told.append("after the commit")
        except NestedTransaction:
            self.told.append("inside a transaction")
        super().notify_messages_available(project, queue)


def test_a_send_tells_other_processes_after_its_commit_and_they_hear_it() -> None:
    with postgres_schema() as url:
        sender: Store = Recording(url)
        other = PostgresStore(url)
        heard: list[tuple[str, str]] = []
        arrived = threading.Event()

        def hear(project: str, queue: str) -> None:
            heard.append((project, queue))
            arrived.set()

        try:
            other.on_messages_available(hear)
            hearing = other.hear_other_processes()
            engine = Engine(sender)
            engine.create_queue(P, Q)
            # Given a process listening (its listener connects in the background)
            assert hearing is not None
            hearing.result(5)
            for _ in range(100):
                # when another sends to a queue,
                engine.send(P, Q, messages=[NewMessage(body=b"x")])
                if arrived.wait(0.1):
                    break
            # then it hears of that queue,
            assert (P, Q) in heard
            # told by the sender only once no transaction of its own was open.
            assert isinstance(sender, Recording)
            assert set(sender.told) == {"after the commit"}
        finally:
            other.close()
            sender.close()
