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
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from deadletter.domain.errors import DeadletterError, StoreUnavailable
from deadletter.domain.model import (
    DeadLetterFilter,
    ListQuery,
    Message,
    Queue,
    QueueSettings,
    QueueTemplate,
    RedriveTask,
)
from deadletter.domain.subscriptions import Delivery, Subscription
from deadletter.storage.tag_base import TagTransaction


@dataclass(frozen=True)
class ClaimRecord:
    id: str
    project: str
    queue: str
    ttl: int
    grace: int
    created_at: float
    expires_at: float


@dataclass(frozen=True)
class CredentialRecord:
    """A credential as stored: the secret only sealed (deadletter.auth.credentials)."""

    key_id: str
    project: str
    role: str
    account_id: str
    sealed_secret: str
    created_at: float
    revoked: bool


@dataclass(frozen=True)
class MessageCounts:
    free: int
    claimed: int
    delayed: int
    oldest: Message | None
    newest: Message | None


class Transaction(TagTransaction):
    """One unit of work against the store. Methods take the project explicitly.

    A read that a write of the same transaction starts from passes `lock`: on PostgreSQL
    (READ COMMITTED) another transaction could change the rows between the read and the write,
    which would then put back the state it read. SQLite's writer holds the whole database."""

    # Whether the transaction changed rows; a store that cannot tell leaves it True.
    changed = True

    # Queues
    @abc.abstractmethod
    def get_queue(self, project: str, name: str, lock: bool = False) -> Queue | None:
        """With `lock`, concurrent transactions that lock the same queue wait for this one."""

    @abc.abstractmethod
    def count_queues(self, project: str) -> int:
        """How many queues the project holds. Concurrent counts of one project wait for one
        another until each transaction ends, so a count followed by an insert is exact."""

    @abc.abstractmethod
    def insert_queue(self, queue: Queue) -> None:
        """When (project, name) is taken the transaction fails with QueueAlreadyExists."""

    @abc.abstractmethod
    def update_queue(
        self, project: str, name: str, settings: QueueSettings, now: float
    ) -> None: ...

    @abc.abstractmethod
    def delete_queue(self, project: str, name: str) -> bool:
        """Delete the queue, its messages, claims, counters and tasks."""

    @abc.abstractmethod
    def list_queues(
        self, project: str, prefix: str | None, after: str | None, limit: int
    ) -> list[Queue]: ...

    @abc.abstractmethod
    def sources_of(self, project: str, dlq: str) -> list[Queue]:
        """Queues whose dead-letter policy names `dlq`, active or not."""

    @abc.abstractmethod
    def dead_letter_targets(self, project: str) -> set[str]:
        """Names that some queue's active policy uses as its DLQ."""

    # Messages
    @abc.abstractmethod
    def insert_messages(self, project: str, messages: Sequence[Message]) -> list[Message]:
        """Store new messages; the store assigns each its sequence number."""

    @abc.abstractmethod
    def get_messages(
        self, project: str, queue: str, ids: Sequence[str], lock: bool = False
    ) -> list[Message]:
        """With `lock`, the rows stay locked until this transaction ends (waiting for others),
        for a write that starts from what was read (`Transaction` docstring)."""

    @abc.abstractmethod
    def claimable(self, project: str, queue: str, now: float, limit: int) -> list[Message]:
        """Visible, unexpired messages, oldest first, locked against other claimants."""

    @abc.abstractmethod
    def list_messages(
        self, project: str, queue: str, now: float, query: ListQuery
    ) -> list[Message]: ...

    @abc.abstractmethod
    def dead_letters(
        self,
        project: str,
        dlq: str,
        now: float,
        where: DeadLetterFilter,
        max_seq: int,
        limit: int,
        lock: bool,
        after_seq: int = 0,
    ) -> list[Message]:
        """Unexpired, unclaimed messages of `dlq` that match `where`, with a sequence number
        in (`after_seq`, `max_seq`], oldest first."""

    @abc.abstractmethod
    def dead_letter_sources(
        self,
        project: str,
        dlq: str,
        now: float,
        where: DeadLetterFilter,
        max_seq: int,
        limit: int,
        after_seq: int,
    ) -> list[tuple[str, int, str | None, str | None]]:
        """(id, seq, source queue or None, source tag or None) of what `dead_letters` would
        return locked: all a redrive needs to decide, without reading the messages."""

    @abc.abstractmethod
    def redrive_messages(
        self,
        project: str,
        ids: Sequence[str],
        destination: str,
        expires_at: float,
        event: dict[str, Any],
        now: float,
        only_tag: str | None = None,
    ) -> None:
        """Send the dead letters `ids` (in this order) back to `destination` in place, by one
        statement: each under a new id and sequence number, as `transitions.redriven` says
        (unclaimed, expiring at `expires_at`, reserved attributes and provenance dropped,
        `event` added to its history; for consumer tag `only_tag` alone where one is given),
        its body never leaving the store."""

    @abc.abstractmethod
    def count_dead_letters(
        self, project: str, dlq: str, now: float, where: DeadLetterFilter, max_seq: int
    ) -> int: ...

    @abc.abstractmethod
    def max_seq(self, project: str, queue: str) -> int: ...

    @abc.abstractmethod
    def update_messages(self, project: str, messages: Sequence[Message]) -> None:
        """Write back delivery state: visibility, claim, claim count, first claim, expiry."""

    @abc.abstractmethod
    def move_messages(self, project: str, messages: Sequence[Message]) -> None:
        """Write back whole messages whose `queue` changed, giving each a new sequence number."""

    @abc.abstractmethod
    def delete_messages(self, project: str, queue: str, ids: Sequence[str]) -> int: ...

    @abc.abstractmethod
    def delete_held(
        self, project: str, queue: str, ids: Sequence[str], claim_id: str, now: float, live: bool
    ) -> list[str]:
        """Delete the unexpired messages among `ids` whose claim is `claim_id` (and, with
        `live`, has not lapsed): an acknowledgement in one statement. The ids deleted."""

    @abc.abstractmethod
    def purge(self, project: str, queue: str) -> int: ...

    @abc.abstractmethod
    def claimed_by(
        self, project: str, queue: str, claim_id: str, lock: bool = False
    ) -> list[Message]:
        """Oldest first; `lock` as in `get_messages`."""

    @abc.abstractmethod
    def expired(self, now: float, limit: int) -> list[tuple[str, Message]]:
        """(project, message) pairs whose expiry has passed, across all queues, locked."""

    @abc.abstractmethod
    def due_dead_letters(self, now: float, limit: int) -> list[tuple[str, str | None, Message]]:
        """(project, consumer group, message) whose `dead_letter_due_at` has passed in that
        group (None: the untagged consumers; a tag: as it sees the message), across all
        queues, up to `limit` of each kind, their deliveries locked."""

    @abc.abstractmethod
    def settle_hidden(self, now: float, limit: int) -> int:
        """Note, for up to `limit` claimed or delayed messages that have become visible by
        `now`, that they are visible (so that `counts` need not look at them again); how many.
        Nothing a reader sees changes."""

    @abc.abstractmethod
    def counts(self, project: str, queue: str, now: float) -> MessageCounts:
        """What `queue` holds at `now`; it costs the same at any depth (the sweep settles
        what time has changed)."""

    @abc.abstractmethod
    def count_by_source(self, project: str, dlq: str, now: float) -> dict[str, int]: ...

    @abc.abstractmethod
    def next_visible(self, project: str, queue: str, now: float) -> float | None:
        """When the first hidden message of a queue (claimed or delayed) becomes visible,
        if any does after `now`."""

    # Claims
    @abc.abstractmethod
    def insert_claim(self, claim: ClaimRecord) -> None: ...

    @abc.abstractmethod
    def get_claim(
        self, project: str, queue: str, claim_id: str, lock: bool = False
    ) -> ClaimRecord | None:
        """`lock` as in `get_messages`."""

    @abc.abstractmethod
    def update_claim(self, claim: ClaimRecord) -> None: ...

    @abc.abstractmethod
    def delete_claim(self, project: str, queue: str, claim_id: str) -> None: ...

    @abc.abstractmethod
    def delete_stale_claims(self, now: float) -> int: ...

    # Counters: per queue, by name ("acknowledged", "expired_dropped", "dead_lettered.<reason>")
    @abc.abstractmethod
    def bump_counter(self, project: str, queue: str, name: str, amount: int) -> None: ...

    @abc.abstractmethod
    def counters(self, project: str, queue: str) -> dict[str, int]: ...

    # Redrive tasks
    @abc.abstractmethod
    def insert_task(self, task: RedriveTask) -> None: ...

    @abc.abstractmethod
    def get_task(self, task_id: str, lock: bool = False) -> RedriveTask | None: ...

    @abc.abstractmethod
    def update_task(self, task: RedriveTask) -> None: ...

    @abc.abstractmethod
    def list_tasks(self, project: str, dlq: str | None, limit: int) -> list[RedriveTask]:
        """Newest first."""

    @abc.abstractmethod
    def active_task_ids(self) -> list[str]:
        """Ids of RUNNING and CANCELLING tasks, across projects."""

    # Failure patterns posted by the analysis pipeline
    @abc.abstractmethod
    def save_patterns(self, project: str, dlq: str, patterns: list[dict[str, Any]]) -> None: ...

    @abc.abstractmethod
    def get_patterns(self, project: str, dlq: str) -> list[dict[str, Any]]: ...

    # Credentials
    @abc.abstractmethod
    def insert_credential(self, credential: CredentialRecord) -> None: ...

    @abc.abstractmethod
    def get_credential(self, key_id: str, lock: bool = False) -> CredentialRecord | None: ...

    @abc.abstractmethod
    def list_credentials(self, project: str | None) -> list[CredentialRecord]:
        """Oldest first; every project's with None."""

    @abc.abstractmethod
    def update_credential(self, credential: CredentialRecord) -> None:
        """Store the role, sealed secret and revoked flag of an existing credential."""

    @abc.abstractmethod
    def account_projects(self, account_id: str) -> set[str]:
        """The projects whose credentials carry `account_id`."""

    # Queue templates
    @abc.abstractmethod
    def insert_template(self, template: QueueTemplate) -> bool:
        """False, and nothing written, when the project has a template of that name."""

    @abc.abstractmethod
    def get_template(self, project: str, name: str) -> QueueTemplate | None: ...

    @abc.abstractmethod
    def list_templates(self, project: str) -> list[QueueTemplate]:
        """By name."""

    @abc.abstractmethod
    def update_template(self, template: QueueTemplate) -> None:
        """Store the pattern, settings and update time of an existing template."""

    @abc.abstractmethod
    def delete_template(self, project: str, name: str) -> bool: ...

    # Subscriptions and the notifications owed to them
    @abc.abstractmethod
    def insert_subscription(self, subscription: Subscription) -> None:
        """When (project, queue, subscriber) is taken the transaction fails with Conflict."""

    @abc.abstractmethod
    def get_subscription(
        self, project: str, queue: str, subscription_id: str, lock: bool = False
    ) -> Subscription | None: ...

    @abc.abstractmethod
    def subscription_by_subscriber(
        self, project: str, queue: str, subscriber: str
    ) -> Subscription | None: ...

    @abc.abstractmethod
    def list_subscriptions(
        self, project: str, queue: str, now: float, after: str | None, limit: int | None
    ) -> list[Subscription]:
        """Unexpired subscriptions by id, after `after`; all of them with `limit` None."""

    @abc.abstractmethod
    def update_subscription(self, subscription: Subscription) -> None: ...

    @abc.abstractmethod
    def delete_subscriptions(self, project: str, queue: str, ids: Sequence[str]) -> int:
        """Delete subscriptions and cancel the notifications still owed to them."""

    @abc.abstractmethod
    def delete_expired_subscriptions(self, now: float) -> int:
        """Expired subscriptions go; what was owed to them while they lived is still sent."""

    @abc.abstractmethod
    def insert_deliveries(self, deliveries: Sequence[Delivery]) -> None: ...

    @abc.abstractmethod
    def due_deliveries(
        self, now: float, limit: int, busy: Sequence[str], lease_until: float
    ) -> list[Delivery]:
        """Due notifications, oldest first, none of the subscriptions in `busy`, each leased
        until `lease_until` (another taker skips it until then: were this process to die with
        it in flight, it is sent again then)."""

    @abc.abstractmethod
    def get_delivery(self, delivery_id: str) -> Delivery | None:
        """Locked against other transactions until this one ends."""

    @abc.abstractmethod
    def update_delivery(self, delivery: Delivery) -> None:
        """Store `due_at`, `attempts` and `last_error`."""

    @abc.abstractmethod
    def delete_delivery(self, delivery_id: str) -> None: ...

    @abc.abstractmethod
    def pending_deliveries(self, project: str, queue: str) -> list[Delivery]: ...

    @abc.abstractmethod
    def wipe(self) -> None:
        """Delete every queue and what belongs to it (test mode's reset); credentials stay."""

    # FIFO queues (the rules are deadletter.engine.fifo's)
    @abc.abstractmethod
    def fifo_candidates(self, project: str, queue: str, now: float, limit: int) -> list[Message]:
        """Visible, unexpired messages of groups with nothing in flight, with no hidden
        message of their group before them, oldest first; not locked."""

    @abc.abstractmethod
    def add_fifo_groups(self, project: str, queue: str, groups: Sequence[str]) -> None:
        """Make the rows that claims lock for these groups, where missing."""

    @abc.abstractmethod
    def lock_fifo_groups(self, project: str, queue: str, groups: Sequence[str]) -> list[str]:
        """Lock the groups until commit, skipping (and leaving out) those another
        transaction holds; a group without its row gets one first."""

    @abc.abstractmethod
    def fifo_claimable(
        self, project: str, queue: str, now: float, limit: int, groups: Sequence[str]
    ) -> list[Message]:
        """`fifo_candidates` of `groups` only, read anew and locked."""

    @abc.abstractmethod
    def remember_deduplication(
        self,
        project: str,
        queue: str,
        scope: str,
        dedup_id: str,
        message: Message,
        until: float,
        now: float,
    ) -> tuple[str, int] | None:
        """Record that `message` holds `dedup_id` in `scope` until `until`; None when it was
        recorded, else the (message id, sequence number) of the live record that holds it."""

    @abc.abstractmethod
    def forget_deduplications(self, project: str, queue: str, now: float) -> None:
        """Drop the records whose interval has passed."""


# Availability: whether a store is answering, one log line when it stops, one when it is back.
# During an outage every request fails the same way; a traceback per request would bury the
# one fact an operator needs. Each store notes every `StoreUnavailable` it raises and every
# transaction that succeeds (`Store.transaction`, `Store.read`), and only the changes of state
# are logged. `/v2/health` reads the state back (`Engine.store_outage`).

log = logging.getLogger("deadletter.storage")


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


class Store(abc.ABC):
    url: str
    # Every transaction's outcome, so that an outage is logged once (`Availability`).
    availability: Availability
    # How many messages a redrive task without a rate moves in one transaction. On SQLite a
    # step holds the one write lock, which every producer waits for: 500 take about 10 ms.
    redrive_batch = 500

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

    def notify_messages_available(self, tx: Transaction, project: str, queue: str) -> None:  # noqa: B027
        """Tell other processes, on commit of `tx`, that `queue` has messages."""

    @abc.abstractmethod
    def close(self) -> None: ...
