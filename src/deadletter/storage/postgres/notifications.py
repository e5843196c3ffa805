"""Wake-ups between server processes: a notifier thread that NOTIFYs after the commits, and a
listener thread that turns the NOTIFYs of its schema into calls, each on a connection of its
own (`PostgresStore.notify_messages_available`, `on_messages_available`), opened with the
store's connection options."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg

log = logging.getLogger(__name__)

CHANNEL = "deadletter_messages"
# Every payload of a burst in one statement, its own transaction (the notifier's session is in
# autocommit): one round trip, where BEGIN, a NOTIFY each and COMMIT took four or more.
NOTIFY_EACH = "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload"


def reconnecting(
    name: str,
    stopping: threading.Event,
    connect: Callable[[], AbstractContextManager[psycopg.Connection[Any]]],
    serve: Callable[[psycopg.Connection[Any]], None],
) -> None:
    """A background thread's life on a connection of its own: `serve` works on the
    connection `connect` opens until `stopping` is set; when the connection is lost (a
    `psycopg.Error` from either) it is reopened a second later. An outage is logged once
    each way, not once per attempt."""
    lost = False
    while not stopping.is_set():
        try:
            with connect() as conn:
                if lost:
                    log.info("%s reconnected", name)
                    lost = False
                serve(conn)
        except psycopg.Error:
            if not lost:
                log.info("%s lost its connection; reconnecting", name)
                lost = True
            stopping.wait(1.0)


class Notifier:
    """A daemon thread on its own connection that NOTIFYs other processes of the queues whose
    messages became available, after the commits that made them available.

    A NOTIFY inside the writing transaction takes PostgreSQL's one notification lock of the
    database at commit and holds it through the commit's WAL flush, so every sending
    transaction of every process would commit one after another (docs/benchmarks.md, "A
    NOTIFY after the commit"). Here the lock is held by a transaction that only notifies,
    without waiting for the disk (`synchronous_commit = off`: a wakeup need not be durable),
    and the queues named meanwhile go in one such transaction, each once, as one statement. A
    wakeup lost to a crash or an outage between the commit and the NOTIFY only delays another
    process's long poll until it re-reads the queue (`_Listener`).
    """

    def __init__(self, url: str, options: dict[str, Any]) -> None:
        self._url = url
        self._options = options
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        # The backend of the notifier's connection while it has one: the process's listener
        # leaves what it sent alone (`Listener`).
        self.backend_pid: int | None = None

    def tell(self, payload: str) -> None:
        with self._lock:
            self._pending.add(payload)
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="deadletter-notify", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    def _take(self) -> list[str]:
        with self._lock:
            payloads, self._pending = sorted(self._pending), set()
            return payloads

    def _run(self) -> None:
        reconnecting("notifier", self._stopping, self._connect, self._notify)

    @contextmanager
    def _connect(self) -> Iterator[psycopg.Connection[Any]]:
        with psycopg.connect(self._url, autocommit=True, **self._options) as conn:
            conn.execute("SET synchronous_commit = off")
            self.backend_pid = conn.info.backend_pid
            try:
                yield conn
            finally:
                self.backend_pid = None

    def _notify(self, conn: psycopg.Connection[Any]) -> None:
        while not self._stopping.is_set():
            self._wake.wait()
            self._wake.clear()
            payloads = self._take()
            if payloads:
                conn.execute(NOTIFY_EACH, (CHANNEL, payloads))


class Listener:
    """A daemon thread on its own connection that turns NOTIFYs of this schema into calls.

    Notifications are delivered on commit, so the callback never sees uncommitted messages.
    A lost connection is reopened; a wakeup missed meanwhile only delays a long poll, which
    re-reads the queue when it times out. What the process's own notifier sent (`own`: its
    backend) is left alone: the process told itself when it committed (`Runner._committed`),
    and hearing it again cost a thread's wake-up a send.
    """

    POLL_SECONDS = 0.5

    def __init__(
        self,
        url: str,
        options: dict[str, Any],
        schema: str,
        callback: Callable[[str, str], None],
        own: Callable[[], int | None] = lambda: None,
    ) -> None:
        self._url = url
        self._options = options
        self._schema = schema
        self._callback = callback
        self._own = own
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="deadletter-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, wake: Callable[[], None] | None = None) -> None:
        self._stopping.set()
        if wake is not None and self._thread.is_alive():
            wake()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        reconnecting("notification listener", self._stopping, self._connect, self._listen)

    @contextmanager
    def _connect(self) -> Iterator[psycopg.Connection[Any]]:
        with psycopg.connect(self._url, autocommit=True, **self._options) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            yield conn

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        while not self._stopping.is_set():
            for note in conn.notifies(timeout=self.POLL_SECONDS):
                if self._stopping.is_set():
                    break
                if note.pid != self._own():
                    self._deliver(note.payload)

    def _deliver(self, payload: str) -> None:
        try:
            schema, project, queue = json.loads(payload)
        except (ValueError, TypeError):
            return
        if schema == self._schema:
            try:
                self._callback(project, queue)
            except Exception:
                log.exception("messages-available callback failed")
