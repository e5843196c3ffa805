"""The engine's unit of work: one store transaction, retried on conflict, events after commit."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from deadletter.engine.events import EngineListener
from deadletter.storage.base import Store, Transaction, TransactionConflict

T = TypeVar("T")
CONFLICT_RETRIES = 5

log = logging.getLogger(__name__)

Event = Callable[[EngineListener], None]


@dataclass
class Pending:
    """Events to emit once the transaction that caused them has committed."""

    available: set[tuple[str, str]] = field(default_factory=set)
    calls: list[Event] = field(default_factory=list)


class Runner:
    """Runs work in transactions and tells the listeners what committed.

    A listener runs after the commit, so whatever it does the operation has happened: a
    listener that raises is logged and counted in `failures`, never raised to the caller (who
    would otherwise retry a send that was saved, and store it twice).
    """

    def __init__(self, store: Store, listeners: Iterable[EngineListener] = ()) -> None:
        self.store = store
        self.listeners: list[EngineListener] = list(listeners)
        self._failures = 0
        self._failures_lock = threading.Lock()

    @property
    def failures(self) -> int:
        """How many listener calls raised since this runner was made."""
        return self._failures

    def run(self, work: Callable[[Transaction, Pending], T]) -> T:
        """Run `work` in one transaction, again if the database aborted it to break a
        deadlock; events are emitted only after the commit (`Store.after_commit`: for work
        under `Store.run_now`, when the caller learns of the commit)."""
        for attempt in range(1, CONFLICT_RETRIES + 1):
            pending = Pending()
            try:
                with self.store.transaction() as tx:
                    result = work(tx, pending)
                break
            except TransactionConflict:
                if attempt == CONFLICT_RETRIES:
                    raise
        self.store.after_commit(lambda: self._committed(pending))
        return result

    def _committed(self, pending: Pending) -> None:
        for call in pending.calls:
            self.emit(call)
        for project, queue in pending.available:
            self.store.notify_messages_available(project, queue)
            self.available(project, queue)

    def read(self, work: Callable[[Transaction], T]) -> T:
        """Run `work`, which only reads, in a read-only transaction (`Store.read`): it waits
        for no writer and no commit, and sees only committed data. Nothing to emit."""
        for attempt in range(1, CONFLICT_RETRIES + 1):
            try:
                with self.store.read() as tx:
                    return work(tx)
            except TransactionConflict:
                if attempt == CONFLICT_RETRIES:
                    raise
        raise AssertionError("unreachable")

    def available(self, project: str, queue: str) -> None:
        """Messages became visible in `queue`, here or in another process sharing the store."""
        self.emit(lambda listener: listener.messages_available(project, queue))

    def emit(self, call: Event) -> None:
        """Give `call` to every listener; one that fails does not keep the others from it."""
        for listener in self.listeners:
            try:
                call(listener)
            except Exception:
                with self._failures_lock:
                    self._failures += 1
                log.exception("engine listener %r failed after a commit", listener)
