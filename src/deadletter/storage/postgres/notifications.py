"""Wake-ups between server processes: a notifier thread that NOTIFYs after the commits, and a
listener thread that turns the NOTIFYs of its schema into calls, each on a connection of its
own (`PostgresStore.notify_messages_available`, `on_messages_available`), opened with the
store's connection options.

A process listens only while something in it waits for other processes' sends (a long poll,
a pushing socket, the console's feed: `PostgresStore.hear_other_processes`), and says so by
holding a shared advisory lock of its schema (`HEARING`) while it listens. A notifier
NOTIFYs only when it cannot take that lock exclusively, that is while some process listens:
a NOTIFY costs a transaction with a WAL record, PostgreSQL's notification lock, and a wake-up
of every listening backend and of the thread behind it, and when no process waits none of it
is needed (docs/benchmarks.md, "Wake-ups only while a process waits").

Why no wake-up is lost to the lock: a listener LISTENs, then takes the lock, then lets its
waiters look at their queues again. A notifier tries the lock after the send's COMMIT. If
it took the lock, the listener took its own after, so its waiters look again after the
COMMIT and find the messages; if it did not, the listener's LISTEN was already in effect and
the NOTIFY reaches it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, InvalidStateError
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg

log = logging.getLogger(__name__)

CHANNEL = "deadletter_messages"
# The advisory lock a listening process holds shared, by schema (class 'ln', apart from the
# queues' lanes): the notifier's try for it exclusively fails while any process listens. A
# schema whose hash meets another's only costs a NOTIFY no one needed.
HEARING = "x'6c6e'::int, hashtext(%s)"
# Every payload of a burst in one statement, its own transaction (the notifier's session is in
# autocommit): one round trip, where BEGIN, a NOTIFY each and COMMIT took four or more. The
# lock is tried once (an InitPlan); taken, it ends with the statement and nothing is sent.
NOTIFY_EACH = (
    "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload"
    f" WHERE NOT (SELECT pg_try_advisory_xact_lock({HEARING}))"
)


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

    # While no process listens, a look (a round trip and a wake-up of this thread) waits
    # this long for the sends after it: a listener that starts meanwhile has its waiters
    # look at their queues, and hears what is committed after its start this much later.
    GATHER_SECONDS = 0.05

    def __init__(self, url: str, options: dict[str, Any], schema: str) -> None:
        self._url = url
        self._options = options
        self._schema = schema
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
        heard = True  # whether a process listened at the last look
        while not self._stopping.is_set():
            self._wake.wait()
            if not heard:
                # No one to wake, most likely: the sends of the next moment go in one look.
                self._stopping.wait(self.GATHER_SECONDS)
            self._wake.clear()
            payloads = self._take()
            if payloads:
                heard = bool(conn.execute(NOTIFY_EACH, (CHANNEL, payloads, self._schema)).rowcount)


class Listener:
    """A daemon thread on its own connection that turns NOTIFYs of this schema into calls,
    while something in the process wants them (`hear`, `stop_hearing`).

    Notifications are delivered on commit, so the callback never sees uncommitted messages.
    A lost connection is reopened; a wakeup missed meanwhile only delays a long poll, which
    re-reads the queue when it times out. What the process's own notifier sent (`own`: its
    backend) is left alone: the process told itself when it committed (`Runner._committed`),
    and hearing it again cost a thread's wake-up a send. Once nothing wants them for
    `LINGER_SECONDS`, the listener stops listening: waits come and go in bursts, and each
    start costs a round trip.
    """

    POLL_SECONDS = 0.5
    LINGER_SECONDS = 10.0

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
        self._lock = threading.Lock()
        self._wanted = threading.Event()  # set when `hear` needs the thread to start listening
        self._hearers = 0
        self.listening = False  # LISTENing, with the lock held: what is sent now is heard
        self._ready: list[Future[None]] = []  # told when listening starts

    def start(self) -> None:
        self._thread.start()

    def hear(self) -> Future[None] | None:
        """Have the callback hear other processes until `stop_hearing`; a future done once
        it does (None: it already does). Until then a send of another process may pass
        unannounced, so what it watches must be looked at again after."""
        with self._lock:
            self._hearers += 1
            if self.listening:
                return None
            ready: Future[None] = Future()
            self._ready.append(ready)
        self._wanted.set()
        return ready

    def stop_hearing(self) -> None:
        with self._lock:
            self._hearers -= 1

    def stop(self, wake: Callable[[], None] | None = None) -> None:
        """End the thread; `wake` sends a notification, which ends its wait for one."""
        self._stopping.set()
        self._wanted.set()
        if wake is not None and self.listening and self._thread.is_alive():
            wake()
        self._thread.join(timeout=5)
        self._tell_ready()  # nothing will be heard: no one waits for it

    def _run(self) -> None:
        reconnecting("notification listener", self._stopping, self._connect, self._listen)

    @contextmanager
    def _connect(self) -> Iterator[psycopg.Connection[Any]]:
        with psycopg.connect(self._url, autocommit=True, **self._options) as conn:
            try:
                yield conn
            finally:
                self.listening = False  # the LISTEN and the lock end with the session

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        unwanted_since: float | None = None
        while not self._stopping.is_set():
            if not self.listening:
                if not self._begin(conn):
                    self._wanted.wait(self.POLL_SECONDS)
                    self._wanted.clear()
                    continue
                unwanted_since = None
            for note in conn.notifies(timeout=self.POLL_SECONDS):
                if self._stopping.is_set():
                    break
                if note.pid != self._own():
                    self._deliver(note.payload)
            with self._lock:
                wanted = self._hearers > 0
            now = time.monotonic()
            if wanted:
                unwanted_since = None
            elif unwanted_since is None:
                unwanted_since = now
            elif now - unwanted_since >= self.LINGER_SECONDS and self._end(conn):
                unwanted_since = None

    def _begin(self, conn: psycopg.Connection[Any]) -> bool:
        """Listen, then hold the lock, if anything wants it; True once listening."""
        with self._lock:
            if self._hearers == 0:
                return False
        conn.execute(f"LISTEN {CHANNEL}")
        conn.execute(f"SELECT pg_advisory_lock_shared({HEARING})", (self._schema,))
        with self._lock:
            self.listening = True
        self._tell_ready()
        return True

    def _end(self, conn: psycopg.Connection[Any]) -> bool:
        """Stop listening unless something wants it again; True when stopped."""
        with self._lock:
            if self._hearers > 0:
                return False
            self.listening = False
        conn.execute(f"SELECT pg_advisory_unlock_shared({HEARING})", (self._schema,))
        conn.execute(f"UNLISTEN {CHANNEL}")
        return True

    def _tell_ready(self) -> None:
        with self._lock:
            ready, self._ready = self._ready, []
        for future in ready:
            with contextlib.suppress(InvalidStateError):  # its waiter went away
                future.set_result(None)

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
