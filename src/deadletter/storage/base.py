"""The storage interface: atomic primitives inside a transaction; every rule lives in the engine.

A backend opens a `Transaction` with `Store.transaction()`. Everything done through one
transaction commits together or not at all, and a commit is durable when it returns.
Reads that pick messages to change (`claimable`, `dead_letters` with `lock=True`) lock the
rows they return so that concurrent transactions skip them instead of handing them out twice.
"""

from __future__ import annotations

import abc
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from deadletter.domain.errors import DeadletterError, StoreUnavailable

# The records are re-exported: the engine reaches storage through this module only.
from deadletter.storage.parts.administration import Administration
from deadletter.storage.parts.administration import CredentialRecord as CredentialRecord
from deadletter.storage.parts.counts import Counts
from deadletter.storage.parts.counts import MessageCounts as MessageCounts
from deadletter.storage.parts.failure_groups import FailureGroups
from deadletter.storage.parts.groups import Groups
from deadletter.storage.parts.messages import ClaimRecord as ClaimRecord
from deadletter.storage.parts.messages import Messages
from deadletter.storage.parts.queues import Queues
from deadletter.storage.parts.subscriptions import Subscriptions


class Transaction(Queues, Messages, Counts, Groups, Subscriptions, Administration, FailureGroups):
    """One unit of work against the store, the union of the parts in `storage.parts`.
    Methods take the project explicitly.

    A read that a write of the same transaction starts from passes `lock`: on PostgreSQL
    (READ COMMITTED) another transaction could change the rows between the read and the write,
    which would then put back the state it read. SQLite's writer holds the whole database."""

    # Whether the transaction changed rows; a store that cannot tell leaves it True.
    changed = True


# Availability: whether a store is answering, one log line when it stops, one when it is back.
# During an outage every request fails the same way; a traceback per request would bury the
# one fact an operator needs. Each store notes every `StoreUnavailable` it raises and every
# transaction that succeeds (`Store.transaction`, `Store.read`), and only the changes of state
# are logged. `/v2/health` reads the state back (`Engine.store_outage`).

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outage:
    """Since when (epoch seconds) and why the store has been refusing work."""

    reason: str
    since: float
    # Reads still answer (a full disk): only a write that commits ends the outage.
    reads_served: bool
    # The latest failure (monotonic seconds): it ends SETTLE_SECONDS after it at the earliest.
    last_failure: float


# An outage ends at the first success this long after its latest failure, so that a burst of
# failures (every pooled connection reset at once, then each found broken in turn) is one
# outage and two lines, not a pair of lines per connection.
SETTLE_SECONDS = 1.0


class Availability:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._outage: Outage | None = None

    @property
    def outage(self) -> Outage | None:
        return self._outage

    def failed(self, exc: StoreUnavailable) -> None:
        now = time.monotonic()
        with self._lock:
            if self._outage is not None:
                self._outage = replace(self._outage, last_failure=now)
                return
            self._outage = Outage(exc.reason, time.time(), exc.reads_served, now)
        cause = exc.__cause__
        log.warning(
            "store unavailable; requests are answered 503 until it is back",
            extra={"reason": exc.reason, "error": _first_line(cause) if cause else exc.reason},
        )

    def succeeded(self, wrote: bool) -> None:
        """A transaction committed (`wrote`: and changed rows) or a read answered."""
        outage = self._outage
        if outage is None:
            return  # the common case reads one attribute and takes no lock
        if outage.reads_served and not wrote:
            return
        if time.monotonic() - outage.last_failure < SETTLE_SECONDS:
            return
        with self._lock:
            if self._outage is not outage:
                return
            self._outage = None
        log.info(
            "store available again",
            extra={"reason": outage.reason, "seconds": round(time.time() - outage.since, 1)},
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class StorageError(DeadletterError):
    """The database failed; the transaction's work is not committed."""


class TransactionConflict(StorageError):
    """The database aborted a transaction to break a deadlock or a serialisation conflict,
    or another process held the database too long; running the same work again in a new
    transaction is safe."""


class NestedTransaction(RuntimeError):
    """A transaction was opened while one of the same store was open in this context; pass the
    open Transaction down instead (on SQLite the inner one would wait for the outer forever)."""


# The stores with a transaction open in this thread or task, by id.
_open_transactions: ContextVar[frozenset[int]] = ContextVar(
    "deadletter_open_transactions", default=frozenset()
)

T = TypeVar("T")


class Deferred(Generic[T]):
    """Work that `Store.run_now` ran, whose transactions' commits may still be under way.

    Each transaction the work ends counts one commit to wait for (`joined`); its committer,
    on whatever thread, reports how it went. `settle`, once every commit is known, makes the
    calls the work left for after its commits (`Store.after_commit`: the engine's events),
    and `result` returns what the work returned or raises what it raised, or the commit's
    error if the commit failed (then nothing happened and nothing is told).
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.after: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._pending = 0
        self._commit_error: BaseException | None = None
        self._waiter: Callable[[], None] | None = None
        self._settled = False
        self._value: Any = None
        self._error: BaseException | None = None

    def run(self, work: Callable[[], T]) -> None:
        """Run `work` with this `Deferred` as the one its transactions join (`running_now`)."""
        token = running_now.set(self)
        try:
            self._value = work()
        except Exception as exc:  # raised to the caller by `result`, as a call would
            self._error = exc
        finally:
            running_now.reset(token)

    def fail(self, error: BaseException) -> None:
        """What its work did was not committed, for `error`: `result` raises it."""
        self._commit_error = error

    def joined(self) -> Callable[[BaseException | None], None]:
        """One more commit to wait for; the returned callable reports its outcome."""
        with self._lock:
            self._pending += 1
        return self._committed

    def _committed(self, error: BaseException | None) -> None:
        with self._lock:
            self._pending -= 1
            if error is not None and self._commit_error is None:
                self._commit_error = error
            waiter = self._waiter if self._pending == 0 else None
            if waiter is not None:
                self._waiter = None
        if waiter is not None:
            waiter()

    @property
    def committing(self) -> bool:
        """Whether a commit it waits for is still under way."""
        return self._pending > 0

    def when_committed(self, waiter: Callable[[], None]) -> bool:
        """Have `waiter` called, from the committing thread, once every commit is known;
        False (and `waiter` is never called) if they are known already."""
        with self._lock:
            if self._pending == 0:
                return False
            self._waiter = waiter
            return True

    def settle(self) -> None:
        """Once every commit is known: make the after-commit calls, once, if they committed."""
        if self._settled:
            return
        self._settled = True
        if self._commit_error is not None:
            if isinstance(self._commit_error, StoreUnavailable):
                self.store.availability.failed(self._commit_error)
            return
        for call in self.after:
            call()

    def result(self) -> T:
        """What the work returned, once settled; its error, or the commit's."""
        self.settle()
        if self._commit_error is not None:
            raise self._commit_error
        if self._error is not None:
            raise self._error
        value: T = self._value
        return value


# The `Deferred` whose work runs in this context (`Store.run_now`), if any.
running_now: ContextVar[Deferred[Any] | None] = ContextVar("deadletter_running_now", default=None)


class Store(abc.ABC):
    url: str
    # Every transaction's outcome, so that an outage is logged once (`Availability`).
    availability: Availability
    # How many messages a redrive task without a rate moves in one transaction. On SQLite a
    # step holds the one write lock, which every producer waits for: 500 take about 10 ms.
    redrive_batch = 500
    # Whether `run_now` ever runs work at once; a store whose every statement waits on the
    # network (PostgreSQL) never does, and its callers go to a worker thread without asking.
    runs_now = False
    # Whether `run_together` runs several works in one transaction (PostgreSQL): their
    # callers then hand them to one thread that runs every work queued at once together.
    runs_together = False

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One transaction; it commits when the block ends and rolls back if it raises."""
        with self._unnested(self._transaction, writes=True) as tx:
            yield tx

    @contextmanager
    def read(self) -> Iterator[Transaction]:
        """A transaction that only reads and sees only committed data. It takes no write lock
        and waits for no commit, so reads go on while writers queue up; anything it tries to
        write fails. Inside a write, read through the write's own transaction instead (it sees
        its own changes): opening a read there is refused like a nested transaction."""
        with self._unnested(self._read, writes=False) as tx:
            yield tx

    @contextmanager
    def _unnested(
        self, opening: Callable[[], AbstractContextManager[Transaction]], writes: bool
    ) -> Iterator[Transaction]:
        open_now = _open_transactions.get()
        if id(self) in open_now:
            raise NestedTransaction(NestedTransaction.__doc__)
        token = _open_transactions.set(open_now | {id(self)})
        try:
            with opening() as tx:
                yield tx
            self.availability.succeeded(wrote=writes and tx.changed)
        except StoreUnavailable as exc:
            self.availability.failed(exc)
            raise
        finally:
            _open_transactions.reset(token)

    def run_now(self, work: Callable[[], T]) -> Deferred[T] | None:
        """Run `work` on this thread at once, if its transactions can run without waiting for
        anything (a lock, another process, the network), not waiting for their commits: the
        caller learns from the `Deferred` when they are known. None, with `work` not run, when
        the store would have to wait; the caller then runs `work` where waiting is harmless.

        For work of bounded size only: it holds the thread until it returns. A store whose
        every statement waits on the network (PostgreSQL) never runs work at once."""
        return None

    def run_together(
        self, works: Sequence[Callable[[], Any]], *, ran: Callable[[], None] = lambda: None
    ) -> list[Deferred[Any] | None]:
        """Run `works`, each of bounded size (as for `run_now`), one after another on this
        thread in one transaction, and commit it: one commit for all of them; `ran()` once
        they have run, before the commit is waited for (the caller may start the next group
        meanwhile). Returns when the commit is known, with one `Deferred` a work, settled on
        the caller's side (its `after_commit` calls, then its result); None for a work to run
        again alone, where waiting is harmless, with nothing it did committed (the group was
        rolled back: a conflict, or a work that failed after it had written). A store that
        cannot group answers None for all."""
        ran()
        return [None] * len(works)

    async def run_together_on_loop(
        self, works: Sequence[Callable[[], Any]], *, ran: Callable[[], None] = lambda: None
    ) -> list[Deferred[Any] | None]:
        """`run_together` called from the event loop's thread, which it never blocks: where
        the works wait for the database the loop serves others, and a group that would wait
        for a free connection is not run (None for each: each runs again alone)."""
        ran()
        return [None] * len(works)

    def commit_now(self) -> None:  # noqa: B027
        """Commit what work under `run_now` left uncommitted, on this thread, if the store is
        free; otherwise whoever holds it commits it. Its `Deferred`s then learn of it."""

    def when_free(self, wake: Callable[[], None]) -> bool:
        """Have `wake()` called, from another thread, once what keeps `run_now` from running
        work at once (another transaction holding the store) has ended; False (never
        called) if nothing to wait for is known: try `run_now` again, or wait elsewhere."""
        return False

    def after_commit(self, call: Callable[[], None]) -> None:
        """`call()` once the transaction that has just ended is committed: now, or, for work
        under `run_now`, when its `Deferred` settles."""
        deferred = running_now.get()
        if deferred is not None and deferred.store is self:
            deferred.after.append(call)
        else:
            call()

    @abc.abstractmethod
    def _transaction(self) -> AbstractContextManager[Transaction]:
        """The backend's transaction; `transaction()` guards it against nesting."""

    def _read(self) -> AbstractContextManager[Transaction]:
        """The backend's read-only transaction; a store without a read path reads in a
        transaction like any other."""
        return self._transaction()

    def on_messages_available(self, callback: Callable[[str, str], None]) -> None:  # noqa: B027
        """Call `callback(project, queue)` when another process makes messages available.

        Backends shared by several processes override this; an embedded one has nothing to do.
        """

    def hear_other_processes(self) -> Future[None] | None:
        """Until `stop_hearing_other_processes`, have the `on_messages_available` callback
        hear what other processes send. A future done once it does: a send of another process
        before that may pass unannounced, so what the caller watches must be looked at again
        after it. None when it already does, or when there are no other processes (an
        embedded store). A backend may stop listening while nothing in the process wants it,
        which spares every other process the notifications."""
        return None

    def stop_hearing_other_processes(self) -> None:  # noqa: B027
        """One `hear_other_processes` ended."""

    def notify_messages_available(self, project: str, queue: str) -> None:  # noqa: B027
        """Tell other processes that `queue` has messages, once the transaction that made them
        available has committed. A wakeup may be lost (a crash right after the commit): a
        long poll must not depend on it for more than its wait."""

    @abc.abstractmethod
    def close(self) -> None: ...
