"""A write transaction held open by another thread, for tests of what goes on beside it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from deadletter.domain.model import Queue, QueueSettings
from deadletter.storage.base import Store

WAIT = 10.0  # seconds; only reached when the behaviour under test is broken


@contextmanager
def write_held_open(store: Store) -> Iterator[None]:
    """Another thread opens a transaction, creates queue `held` in it and keeps it open (on
    SQLite: holding the write lock, in a group not yet committed) until the block ends."""
    opened, finish = threading.Event(), threading.Event()

    def writer() -> None:
        with store.transaction() as tx:
            tx.insert_queue(Queue("p", "held", QueueSettings(), created_at=0.0, updated_at=0.0))
            opened.set()
            finish.wait(WAIT)

    thread = threading.Thread(target=writer)
    thread.start()
    assert opened.wait(WAIT)
    try:
        yield
    finally:
        finish.set()
        thread.join(WAIT)
