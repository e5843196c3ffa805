"""Group commit on PostgreSQL: the hot calls queued at one moment share one transaction.

Each hot call (a send, a claim, a delete of one batch) used to run on a worker thread of its
own, in a transaction of its own: a BEGIN, its statements and a COMMIT, each a round trip,
the COMMIT a WAL flush, and a hand-off between threads (and of the interpreter lock) for
each. `PostgresStore.run_together` runs every call queued at once one after another on one
connection, in one transaction: one BEGIN, each call's statements, one COMMIT. Each call's
answer still leaves only after that COMMIT has returned, and its events (`after_commit`)
follow it. Its caller (`api/threads.py`) runs it on the event loop's thread
(`PostgresStore.run_together_on_loop`, `on_loop.py`) and lets another runner start the next
group, on another connection, while this one waits for its COMMIT.

What a failure does to the others:

- a call that raises before it sent a statement that writes (a refused request, having read
  its queue's row) changed nothing: the group goes on without it (the row locks it took go
  with the COMMIT);
- a call that raises after it sent one may have written before it failed, and a failed
  statement leaves the transaction unusable: the group stops, is rolled back, and each of
  its calls runs again alone in a transaction of its own (as it would have without the
  group), so none is lost or done twice. A conflict (a deadlock broken by PostgreSQL, a
  serialisation failure) does the same, whoever it struck;
- the database gone (`StoreUnavailable`: no connection, a connection cut at its deadline, a
  full disk) fails every call of the group with that error, nothing committed, as each would
  have met it alone; running them again would only make each wait for the outage once more.

Counters are written to the connection's shard (`queries.SHARD`), which no other connection
of the process shares; a group of another process may share it, and the two may take the
same counter rows in different orders: PostgreSQL then breaks the deadlock (after
`deadlock_timeout`), and the group it aborts runs its calls again alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from deadletter.storage.base import Deferred, StorageError, Store, Transaction
from deadletter.storage.postgres.composed import ComposedStatements
from deadletter.storage.postgres.dialect import POSTGRES
from deadletter.storage.postgres.prepared import PreparedCursor

# At most this many calls share one transaction: the last of them waits for every earlier
# one's statements, and all of them for its COMMIT.
GROUP_LIMIT = 32


class GroupAbandoned(StorageError):
    """An earlier call of the group failed after it had sent statements: the group's
    transaction is rolled back, and this call runs again alone."""


@dataclass
class Group:
    """The open transaction that the calls of one group share, on one connection."""

    store: Store
    conn: psycopg.Connection[Any]
    # A transaction of one call on the group's cursor, `begun` if the group's BEGIN was sent.
    open_transaction: Callable[[PreparedCursor, bool], ComposedStatements]
    begun: bool = False
    # The calls' one cursor, in turn: each has read all it needs before the next starts.
    cursor: PreparedCursor = field(init=False)
    # What stopped the group, if anything did: it is then rolled back.
    failure: BaseException | None = None
    # Each call's report of the COMMIT (`Deferred.joined`).
    done: list[Callable[[BaseException | None], None]] = field(default_factory=list)
    # Counter bumps of the calls so far not yet written: each call takes them over (its
    # claim step carries them, a statement that reads the counters writes them first), and
    # the COMMIT writes what is left, in one round trip with it.
    bumps: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # The queue rows the calls read, shared (`ComposedStatements.queue_rows`).
    queue_rows: dict[tuple[str, str], Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cursor = PreparedCursor(self.conn.cursor())

    def run(self, works: Sequence[Callable[[], Any]], deferreds: Sequence[Deferred[Any]]) -> None:
        """Each work in turn, its transactions members of the group, until one fails after it
        wrote (`failure`)."""
        token = open_group.set(self)
        try:
            for work, deferred in zip(works, deferreds, strict=True):
                deferred.run(work)
                if self.failure is not None:
                    break
        finally:
            open_group.reset(token)

    @contextmanager
    def member(self, deferred: Deferred[Any]) -> Iterator[Transaction]:
        """One transaction of a call of the group: its statements join the group's, its
        counter bumps go on with the group's, and its COMMIT is the group's."""
        if self.failure is not None:
            raise GroupAbandoned(GroupAbandoned.__doc__)
        tx = self.open_transaction(self.cursor, self.begun)
        tx.carry(self.bumps)
        tx.queue_rows = self.queue_rows
        try:
            with POSTGRES.translated_errors():
                yield tx
        except BaseException as exc:
            if tx.wrote or self._broken() or not isinstance(exc, Exception):
                self.failure = exc
            raise
        finally:
            self.begun = self.begun or tx.begun
            # A call that failed without writing made no bumps: what it holds is the group's.
            self.bumps = tx.carried()
        self.done.append(deferred.joined())

    def _broken(self) -> bool:
        """Whether the transaction can no longer go on (a statement failed in it)."""
        status = self.conn.info.transaction_status
        return self.conn.closed or status not in (TransactionStatus.IDLE, TransactionStatus.INTRANS)

    def commit(self) -> None:
        """The group's COMMIT, behind the counter bumps still pending, in one round trip."""
        if self.begun:
            closing = self.open_transaction(self.cursor, True)
            closing.carry(self.bumps)
            self.bumps = {}
            closing.commit()

    def told(self, error: BaseException | None) -> None:
        """Tell each call how the COMMIT went."""
        for done in self.done:
            done(error)


# The group whose calls run in this context, if any (`PostgresStore.run_together`).
open_group: ContextVar[Group | None] = ContextVar("deadletter_open_group", default=None)
