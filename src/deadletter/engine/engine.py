"""Every queue operation and every dead-letter rule, written once, above the storage interface."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from deadletter.clock import Clock, SystemClock
from deadletter.domain import errors
from deadletter.domain.model import (
    MAX_CLAIM_COUNT,
    MAX_CLAIM_TTL,
    MAX_DELAY,
    MAX_DESCRIPTION,
    MAX_ERROR_DETAILS,
    MAX_MESSAGE_SIZE,
    MAX_REDRIVE_ALLOW_SOURCES,
    MAX_TTL,
    MIN_DLQ_MESSAGE_TTL,
    RESERVED_ATTRIBUTE_PREFIX,
    SOURCE_QUEUE_ATTRIBUTE,
    Attribute,
    Claim,
    DeadLetterFilter,
    ListQuery,
    Message,
    NewMessage,
    Provenance,
    Queue,
    QueueSettings,
    QueueStats,
    Reason,
    RedrivePermission,
    RedriveTask,
    TaskStatus,
)
from deadletter.engine.events import EngineListener
from deadletter.storage.base import (
    ClaimRecord,
    Store,
    Transaction,
    TransactionConflict,
)

T = TypeVar("T")
CONFLICT_RETRIES = 5
ATTRIBUTE_TYPES = ("String", "Number", "Binary")


def new_id() -> str:
    return str(uuid.uuid4())


@dataclass
class _Pending:
    """Events to emit once the transaction that caused them has committed."""

    available: set[tuple[str, str]]
    calls: list[Callable[[EngineListener], None]]


class Engine:
    def __init__(
        self,
        store: Store,
        clock: Clock | None = None,
        listeners: Iterable[EngineListener] = (),
    ) -> None:
        self.store = store
        self.clock = clock or SystemClock()
        self.listeners: list[EngineListener] = list(listeners)
        store.on_messages_available(self._remote_available)

    def add_listener(self, listener: EngineListener) -> None:
        self.listeners.append(listener)

    def _remote_available(self, project: str, queue: str) -> None:
        for listener in self.listeners:
            listener.messages_available(project, queue)

    def _run(self, work: Callable[[Transaction, _Pending], T]) -> T:
        """Run `work` in one transaction, again if the database aborted it to break a
        deadlock; events are emitted only after the commit."""
        for attempt in range(1, CONFLICT_RETRIES + 1):
            pending = _Pending(set(), [])
            try:
                with self.store.transaction() as tx:
                    result = work(tx, pending)
                    for project, queue in pending.available:
                        self.store.notify_messages_available(tx, project, queue)
                break
            except TransactionConflict:
                if attempt == CONFLICT_RETRIES:
                    raise
        for call in pending.calls:
            for listener in self.listeners:
                call(listener)
        for project, queue in pending.available:
            self._remote_available(project, queue)
        return result

    # Queues

    def create_queue(self, project: str, name: str, settings: QueueSettings | None = None) -> Queue:
        settings = settings or QueueSettings()

        def work(tx: Transaction, _: _Pending) -> Queue:
            if tx.get_queue(project, name) is not None:
                raise errors.QueueAlreadyExists(f"queue {name!r} already exists")
            checked = self._checked_settings(tx, project, name, settings)
            now = self.clock.now()
            queue = Queue(project, name, checked, now, now)
            tx.insert_queue(queue)
            return queue

        return self._run(work)

    def get_queue(self, project: str, name: str) -> Queue:
        return self._run(lambda tx, _: self._queue(tx, project, name))

    def find_queue(self, project: str, name: str) -> Queue | None:
        return self._run(lambda tx, _: tx.get_queue(project, name))

    def update_queue(self, project: str, name: str, settings: QueueSettings) -> Queue:
        def work(tx: Transaction, _: _Pending) -> Queue:
            old = self._queue(tx, project, name)
            checked = self._checked_settings(tx, project, name, settings)
            now = self.clock.now()
            tx.update_queue(project, name, checked, now)
            return replace(old, settings=checked, updated_at=now)

        return self._run(work)

    def change_settings(
        self, project: str, name: str, change: Callable[[Queue], QueueSettings]
    ) -> Queue:
        """Read a queue's settings, apply `change` and write the result in one transaction, so
        two concurrent changes (a tag here, an attribute there) never lose one another.
        `change` may raise to refuse; nothing is written then."""

        def work(tx: Transaction, _: _Pending) -> Queue:
            old = self._queue(tx, project, name)
            checked = self._checked_settings(tx, project, name, change(old))
            now = self.clock.now()
            tx.update_queue(project, name, checked, now)
            return replace(old, settings=checked, updated_at=now)

        return self._run(work)

    def delete_queue(self, project: str, name: str) -> bool:
        """Delete a queue and its messages. Sources that used it as DLQ keep their messages,
        which go on being delivered; their policy turns inactive."""

        def work(tx: Transaction, _: _Pending) -> bool:
            now = self.clock.now()
            for source in tx.sources_of(project, name):
                policy = source.settings.dead_letter
                if policy is not None and policy.active:
                    settings = source.settings.with_changes(
                        dead_letter=replace(policy, active=False)
                    )
                    tx.update_queue(project, source.name, settings, now)
            return tx.delete_queue(project, name)

        return self._run(work)

    def list_queues(
        self, project: str, prefix: str | None = None, after: str | None = None, limit: int = 10
    ) -> list[Queue]:
        return self._run(lambda tx, _: tx.list_queues(project, prefix, after, limit))

    def dead_letter_sources(self, project: str, dlq: str) -> list[Queue]:
        def work(tx: Transaction, _: _Pending) -> list[Queue]:
            self._queue(tx, project, dlq)
            return tx.sources_of(project, dlq)

        return self._run(work)

    def is_dead_letter_queue(self, project: str, name: str) -> bool:
        return self._run(lambda tx, _: name in tx.dead_letter_targets(project))

    def stats(self, project: str, name: str) -> QueueStats:
        def work(tx: Transaction, _: _Pending) -> QueueStats:
            queue = self._queue(tx, project, name)
            now = self.clock.now()
            counts = tx.counts(project, name, now)
            counters = tx.counters(project, name)
            prefix = "dead_lettered."
            policy = queue.settings.dead_letter
            return QueueStats(
                free=counts.free,
                claimed=counts.claimed,
                delayed=counts.delayed,
                total=counts.free + counts.claimed + counts.delayed,
                oldest=counts.oldest,
                newest=counts.newest,
                dead_lettered={
                    k[len(prefix) :]: v for k, v in counters.items() if k.startswith(prefix)
                },
                expired_dropped=counters.get("expired_dropped", 0),
                acknowledged=counters.get("acknowledged", 0),
                by_source=tx.count_by_source(project, name, now),
                policy_active=policy.active if policy else None,
            )

        return self._run(work)

    def purge(self, project: str, name: str) -> int:
        def work(tx: Transaction, _: _Pending) -> int:
            self._queue(tx, project, name)
            return tx.purge(project, name)

        return self._run(work)

    def _queue(self, tx: Transaction, project: str, name: str) -> Queue:
        queue = tx.get_queue(project, name)
        if queue is None:
            raise errors.QueueNotFound(f"queue {name!r} does not exist")
        return queue

    def _checked_settings(
        self, tx: Transaction, project: str, name: str, s: QueueSettings
    ) -> QueueSettings:
        """Validate settings against their ranges and the no-chain, no-cycle rules."""
        _check_range("default message TTL", s.default_ttl, 1, MAX_TTL)
        _check_range("maximum message TTL", s.max_ttl, 1, MAX_TTL)
        if s.default_ttl > s.max_ttl:
            raise errors.InvalidInput(
                f"default message TTL ({s.default_ttl}) exceeds the maximum ({s.max_ttl})"
            )
        _check_range("default delay", s.default_delay, 0, MAX_DELAY)
        _check_range("claim TTL", s.claim_ttl, 0, MAX_CLAIM_TTL)
        _check_range("maximum message size", s.max_message_size, 1, MAX_MESSAGE_SIZE)
        _check_range("receive wait time", s.receive_wait, 0, 20)
        allow = s.redrive_allow
        if allow.permission is RedrivePermission.BY_QUEUE:
            if not 1 <= len(allow.sources) <= MAX_REDRIVE_ALLOW_SOURCES:
                raise errors.InvalidInput(
                    f"a byQueue redrive-allow policy lists 1 to {MAX_REDRIVE_ALLOW_SOURCES}"
                    " source queues"
                )
        elif allow.sources:
            raise errors.InvalidInput("source queues can be listed only with byQueue")
        policy = s.dead_letter
        if policy is None:
            return s
        _check_range("max claim count", policy.max_claims, 1, MAX_CLAIM_COUNT)
        if policy.message_ttl is not None:
            _check_range(
                "dead-letter message TTL", policy.message_ttl, MIN_DLQ_MESSAGE_TTL, MAX_TTL
            )
        if policy.target == name:
            raise errors.DeadLetterChainRefused(
                f"queue {name!r} cannot be its own dead-letter queue"
            )
        target = tx.get_queue(project, policy.target)
        if target is None:
            raise errors.DeadLetterTargetMissing(
                f"dead-letter queue {policy.target!r} does not exist; create it first"
            )
        target_policy = target.settings.dead_letter
        if target_policy is not None and target_policy.active:
            raise errors.DeadLetterChainRefused(
                f"{policy.target!r} has a dead-letter policy of its own, so it cannot be a"
                " dead-letter queue (no chains)"
            )
        if name in tx.dead_letter_targets(project):
            raise errors.DeadLetterChainRefused(
                f"{name!r} is a dead-letter queue, so it cannot have a dead-letter policy"
                " (no chains)"
            )
        if not target.settings.redrive_allow.admits(name):
            raise errors.RedriveNotAllowed(
                f"the redrive-allow policy of {policy.target!r} does not admit {name!r}"
            )
        return s.with_changes(dead_letter=replace(policy, active=True))

    # Messages

    def send(
        self,
        project: str,
        queue_name: str,
        messages: Sequence[NewMessage],
        client_id: str | None = None,
    ) -> list[Message]:
        if not messages:
            raise errors.InvalidInput("no messages to send")

        def work(tx: Transaction, pending: _Pending) -> list[Message]:
            queue = self._queue(tx, project, queue_name)
            s = queue.settings
            now = self.clock.now()
            built = []
            for new in messages:
                _check_attributes(new.attributes)
                size = len(new.body) + sum(
                    len(k) + len(a.type) + len(a.value) for k, a in new.attributes.items()
                )
                if size > s.max_message_size:
                    raise errors.MessageTooLarge(
                        f"message of {size} bytes exceeds the queue's maximum of"
                        f" {s.max_message_size}"
                    )
                ttl = s.default_ttl if new.ttl is None else new.ttl
                _check_range("message TTL", ttl, 1, s.max_ttl)
                delay = s.default_delay if new.delay is None else new.delay
                _check_range("delay", delay, 0, MAX_DELAY)
                eligible = (
                    s.dead_letter_eligible
                    if new.dead_letter_eligible is None
                    else new.dead_letter_eligible
                )
                built.append(
                    Message(
                        id=new_id(),
                        queue=queue_name,
                        seq=0,
                        body=new.body,
                        attributes=dict(new.attributes),
                        enqueued_at=now,
                        expires_at=now + ttl,
                        visible_at=now + delay,
                        claim_id=None,
                        claim_expires_at=None,
                        claim_count=0,
                        first_claimed_at=None,
                        client_id=client_id,
                        dead_letter_eligible=eligible,
                    )
                )
            stored = tx.insert_messages(project, built)
            pending.available.add((project, queue_name))
            pending.calls.append(lambda lst: lst.sent(project, queue_name, len(stored)))
            return stored

        return self._run(work)

    def list_messages(self, project: str, queue: str, query: ListQuery) -> list[Message]:
        def work(tx: Transaction, _: _Pending) -> list[Message]:
            self._queue(tx, project, queue)
            return tx.list_messages(project, queue, self.clock.now(), query)

        return self._run(work)

    def get_messages(self, project: str, queue: str, ids: Sequence[str]) -> list[Message]:
        """The unexpired messages among `ids`; missing ones are left out."""

        def work(tx: Transaction, _: _Pending) -> list[Message]:
            self._queue(tx, project, queue)
            now = self.clock.now()
            return [m for m in tx.get_messages(project, queue, ids) if m.expires_at > now]

        return self._run(work)

    def get_message(self, project: str, queue: str, message_id: str) -> Message:
        found = self.get_messages(project, queue, [message_id])
        if not found:
            raise errors.MessageNotFound(f"message {message_id!r} does not exist")
        return found[0]

    def delete_message(
        self,
        project: str,
        queue: str,
        message_id: str,
        claim_id: str | None = None,
        strict: bool = True,
    ) -> bool:
        """Acknowledge one message.

        Without `claim_id` a claimed message is refused. With it, the id must match the
        message's claim: under `strict` (Zaqar) a wrong or expired claim is an error; otherwise
        (SQS receipt handles) a message claimed since by someone else is left alone and False
        is returned.
        """

        (deleted,) = self.delete_held(project, queue, [(message_id, claim_id)], strict)
        if isinstance(deleted, errors.DeadletterError):
            raise deleted
        return deleted

    def delete_held(
        self,
        project: str,
        queue: str,
        held: Sequence[tuple[str, str | None]],
        strict: bool = True,
    ) -> list[bool | errors.DeadletterError]:
        """Acknowledge several (message id, claim id) pairs in one transaction, each by the
        rules of `delete_message`; per pair, whether it was deleted or why it was refused."""

        def work(tx: Transaction, pending: _Pending) -> list[bool | errors.DeadletterError]:
            self._queue(tx, project, queue)
            now = self.clock.now()
            found = {
                m.id: m
                for m in tx.get_messages(project, queue, [mid for mid, _ in held])
                if m.expires_at > now
            }
            results: list[bool | errors.DeadletterError] = []
            for message_id, claim_id in held:
                results.append(
                    _may_delete(found.get(message_id), message_id, claim_id, now, strict)
                )
            gone = [mid for (mid, _), ok in zip(held, results, strict=True) if ok is True]
            if gone:
                count = tx.delete_messages(project, queue, gone)
                tx.bump_counter(project, queue, "acknowledged", count)
                pending.calls.append(lambda lst: lst.acknowledged(project, queue, count))
            return results

        return self._run(work)

    def delete_messages(self, project: str, queue: str, ids: Sequence[str]) -> int:
        """Delete by ids whatever their claims (Zaqar's bulk delete)."""

        def work(tx: Transaction, pending: _Pending) -> int:
            self._queue(tx, project, queue)
            gone = tx.delete_messages(project, queue, ids)
            if gone:
                tx.bump_counter(project, queue, "acknowledged", gone)
                pending.calls.append(lambda lst: lst.acknowledged(project, queue, gone))
            return gone

        return self._run(work)

    def pop(self, project: str, queue: str, limit: int) -> list[Message]:
        """Take and delete up to `limit` visible messages, oldest first."""

        def work(tx: Transaction, pending: _Pending) -> list[Message]:
            self._queue(tx, project, queue)
            taken = tx.claimable(project, queue, self.clock.now(), limit)
            if taken:
                tx.delete_messages(project, queue, [m.id for m in taken])
                tx.bump_counter(project, queue, "acknowledged", len(taken))
                pending.calls.append(lambda lst: lst.acknowledged(project, queue, len(taken)))
            return taken

        return self._run(work)

    # Claims

    def claim(
        self,
        project: str,
        queue_name: str,
        limit: int,
        ttl: int | None = None,
        grace: int = 0,
    ) -> Claim:
        """Claim up to `limit` messages, oldest first.

        A message already delivered `max_claims` times moves to the DLQ instead, in the same
        transaction; the claim then holds only what was delivered, possibly nothing.
        """
        _check_range("claim limit", limit, 1, 1000)
        _check_range("grace", grace, 0, MAX_TTL)

        def work(tx: Transaction, pending: _Pending) -> Claim:
            queue = self._queue(tx, project, queue_name)
            claim_ttl = queue.settings.claim_ttl if ttl is None else ttl
            _check_range("claim TTL", claim_ttl, 0, MAX_CLAIM_TTL)
            now = self.clock.now()
            policy = queue.settings.dead_letter
            claim_id = new_id()
            expires = now + claim_ttl
            delivered: list[Message] = []
            while len(delivered) < limit:
                candidates = tx.claimable(project, queue_name, now, limit - len(delivered))
                if not candidates:
                    break
                poisoned = []
                fresh = []
                for m in candidates:
                    if policy is not None and policy.active and m.claim_count >= policy.max_claims:
                        poisoned.append(m)
                    else:
                        fresh.append(
                            replace(
                                m,
                                claim_id=claim_id,
                                claim_expires_at=expires,
                                visible_at=expires,
                                claim_count=m.claim_count + 1,
                                first_claimed_at=m.first_claimed_at or now,
                                expires_at=max(m.expires_at, expires + grace),
                            )
                        )
                tx.update_messages(project, fresh)
                delivered += fresh
                if not poisoned:
                    break
                self._dead_letter(tx, pending, queue, poisoned, Reason.MAX_CLAIMS, now)
            if delivered:
                tx.insert_claim(
                    ClaimRecord(claim_id, project, queue_name, claim_ttl, grace, now, expires)
                )
                count = len(delivered)
                pending.calls.append(lambda lst: lst.claimed(project, queue_name, count))
            return Claim(claim_id, queue_name, claim_ttl, grace, now, expires, tuple(delivered))

        return self._run(work)

    def get_claim(self, project: str, queue: str, claim_id: str) -> Claim:
        def work(tx: Transaction, _: _Pending) -> Claim:
            self._queue(tx, project, queue)
            now = self.clock.now()
            record = self._live_claim(tx, project, queue, claim_id, now)
            messages = tuple(
                m for m in tx.claimed_by(project, queue, claim_id) if m.is_claimed(now)
            )
            return Claim(
                record.id,
                queue,
                record.ttl,
                record.grace,
                record.created_at,
                record.expires_at,
                messages,
            )

        return self._run(work)

    def renew_claim(
        self, project: str, queue: str, claim_id: str, ttl: int, grace: int | None = None
    ) -> Claim:
        _check_range("claim TTL", ttl, 0, MAX_CLAIM_TTL)

        def work(tx: Transaction, _: _Pending) -> Claim:
            self._queue(tx, project, queue)
            now = self.clock.now()
            record = self._live_claim(tx, project, queue, claim_id, now)
            new_grace = record.grace if grace is None else grace
            expires = now + ttl
            held = [m for m in tx.claimed_by(project, queue, claim_id) if m.is_claimed(now)]
            renewed = [
                replace(
                    m,
                    claim_expires_at=expires,
                    visible_at=expires,
                    expires_at=max(m.expires_at, expires + new_grace),
                )
                for m in held
            ]
            tx.update_messages(project, renewed)
            tx.update_claim(replace(record, ttl=ttl, grace=new_grace, expires_at=expires))
            return Claim(
                claim_id, queue, ttl, new_grace, record.created_at, expires, tuple(renewed)
            )

        return self._run(work)

    def release_claim(self, project: str, queue: str, claim_id: str) -> int:
        """Make every message still held by the claim visible again."""

        def work(tx: Transaction, pending: _Pending) -> int:
            self._queue(tx, project, queue)
            now = self.clock.now()
            record = tx.get_claim(project, queue, claim_id)
            if record is None:
                raise errors.ClaimNotFound(f"claim {claim_id!r} does not exist")
            held = [m for m in tx.claimed_by(project, queue, claim_id) if m.is_claimed(now)]
            tx.update_messages(project, [_unclaimed(m, now) for m in held])
            tx.delete_claim(project, queue, claim_id)
            if held:
                pending.available.add((project, queue))
            return len(held)

        return self._run(work)

    def release_message(
        self, project: str, queue: str, message_id: str, claim_id: str, delay: int = 0
    ) -> Message:
        """Give one claimed message back (a nack), visible again after `delay` seconds."""
        _check_range("delay", delay, 0, MAX_CLAIM_TTL)

        def work(tx: Transaction, pending: _Pending) -> Message:
            now = self.clock.now()
            message = self._held(tx, project, queue, message_id, claim_id, now)
            released = replace(_unclaimed(message, now), visible_at=now + delay)
            tx.update_messages(project, [released])
            if delay == 0:
                pending.available.add((project, queue))
            return released

        return self._run(work)

    def change_visibility(
        self, project: str, queue: str, message_id: str, claim_id: str, timeout: int
    ) -> Message:
        """Extend or shorten one message's claim; 0 makes it visible now."""
        _check_range("visibility timeout", timeout, 0, MAX_CLAIM_TTL)

        def work(tx: Transaction, pending: _Pending) -> Message:
            now = self.clock.now()
            message = self._held(tx, project, queue, message_id, claim_id, now)
            if timeout == 0:
                changed = _unclaimed(message, now)
                pending.available.add((project, queue))
            else:
                changed = replace(
                    message,
                    claim_expires_at=now + timeout,
                    visible_at=now + timeout,
                    expires_at=max(message.expires_at, now + timeout),
                )
            tx.update_messages(project, [changed])
            return changed

        return self._run(work)

    def dead_letter(
        self,
        project: str,
        queue_name: str,
        held: Sequence[tuple[str, str]],
        description: str | None = None,
        error: str | None = None,
    ) -> list[Message]:
        """A consumer holding the claims moves messages straight to the DLQ (reason `rejected`).

        `held` lists (message id, claim id) pairs; all move or none does.
        """
        if description is not None and len(description) > MAX_DESCRIPTION:
            raise errors.InvalidInput(f"description is longer than {MAX_DESCRIPTION} characters")
        if error is not None and len(error) > MAX_ERROR_DETAILS:
            raise errors.InvalidInput(
                f"error details are longer than {MAX_ERROR_DETAILS} characters"
            )
        if not held:
            raise errors.InvalidInput("no messages to dead-letter")

        def work(tx: Transaction, pending: _Pending) -> list[Message]:
            queue = self._queue(tx, project, queue_name)
            policy = queue.settings.dead_letter
            if queue_name in tx.dead_letter_targets(project):
                raise errors.NoActiveDeadLetterPolicy(
                    f"{queue_name!r} is a dead-letter queue; its messages cannot be dead-lettered"
                )
            if policy is None or not policy.active:
                raise errors.NoActiveDeadLetterPolicy(
                    f"queue {queue_name!r} has no active dead-letter policy"
                )
            now = self.clock.now()
            messages = [self._held(tx, project, queue_name, mid, cid, now) for mid, cid in held]
            return self._dead_letter(
                tx, pending, queue, messages, Reason.REJECTED, now, description, error
            )

        return self._run(work)

    def _held(
        self, tx: Transaction, project: str, queue: str, message_id: str, claim_id: str, now: float
    ) -> Message:
        self._queue(tx, project, queue)
        found = [m for m in tx.get_messages(project, queue, [message_id]) if m.expires_at > now]
        if not found:
            raise errors.MessageNotFound(f"message {message_id!r} does not exist")
        message = found[0]
        if message.claim_id != claim_id or not message.is_claimed(now):
            raise errors.ClaimMismatch(
                f"claim {claim_id!r} is not the live claim of message {message_id!r}"
            )
        return message

    def _live_claim(
        self, tx: Transaction, project: str, queue: str, claim_id: str, now: float
    ) -> ClaimRecord:
        record = tx.get_claim(project, queue, claim_id)
        if record is None or record.expires_at <= now:
            raise errors.ClaimNotFound(f"claim {claim_id!r} does not exist or has expired")
        return record

    def _dead_letter(
        self,
        tx: Transaction,
        pending: _Pending,
        source: Queue,
        messages: Sequence[Message],
        reason: Reason,
        now: float,
        description: str | None = None,
        error: str | None = None,
    ) -> list[Message]:
        """Move messages from `source` to its DLQ: visible, unclaimed, with their provenance."""
        policy = source.settings.dead_letter
        assert policy is not None and policy.active, "callers check the policy"
        dlq = self._queue(tx, source.project, policy.target)
        moved = []
        for m in messages:
            if policy.message_ttl is not None:
                expires = now + policy.message_ttl
            elif reason is Reason.EXPIRED:
                # Keeping an expiry that has passed would drop it at once.
                expires = now + dlq.settings.default_ttl
            else:
                expires = m.expires_at
            event = {
                "event": "dead_lettered",
                "at": now,
                "queue": source.name,
                "dlq": dlq.name,
                "reason": reason.value,
                "claim_count": m.claim_count,
                "description": description,
            }
            moved.append(
                replace(
                    m,
                    queue=dlq.name,
                    attributes={
                        **m.attributes,
                        SOURCE_QUEUE_ATTRIBUTE: Attribute("String", source.name),
                    },
                    expires_at=expires,
                    visible_at=now,
                    claim_id=None,
                    claim_expires_at=None,
                    provenance=Provenance(
                        source_queue=source.name,
                        reason=reason,
                        dead_lettered_at=now,
                        claim_count=m.claim_count,
                        original_message_id=m.id,
                        original_enqueued_at=m.enqueued_at,
                        description=description,
                        error=error,
                    ),
                    history=(*m.history, event),
                )
            )
        tx.move_messages(source.project, moved)
        tx.bump_counter(source.project, source.name, f"dead_lettered.{reason.value}", len(moved))
        pending.available.add((source.project, dlq.name))
        project, count = source.project, len(moved)
        pending.calls.append(
            lambda lst: lst.dead_lettered(project, source.name, dlq.name, reason.value, count)
        )
        return moved

    # Expiry

    def sweep_expired(self, limit: int = 1000) -> int:
        """Drop expired messages, or dead-letter them where the queue asks for it."""

        def work(tx: Transaction, pending: _Pending) -> int:
            now = self.clock.now()
            found = tx.expired(now, limit)
            by_queue: dict[tuple[str, str], list[Message]] = defaultdict(list)
            for project, m in found:
                by_queue[(project, m.queue)].append(m)
            for (project, name), messages in by_queue.items():
                queue = tx.get_queue(project, name)
                policy = queue.settings.dead_letter if queue else None
                to_dlq: list[Message] = []
                if queue is not None and policy is not None and policy.active and policy.on_expiry:
                    to_dlq = [m for m in messages if m.dead_letter_eligible]
                if to_dlq and queue is not None:
                    self._dead_letter(tx, pending, queue, to_dlq, Reason.EXPIRED, now)
                moved_ids = {m.id for m in to_dlq}
                dropped = [m.id for m in messages if m.id not in moved_ids]
                if dropped:
                    tx.delete_messages(project, name, dropped)
                    tx.bump_counter(project, name, "expired_dropped", len(dropped))
                    count = len(dropped)
                    pending.calls.append(_expired_event(project, name, count))
            tx.delete_stale_claims(now - 3600)
            return len(found)

        return self._run(work)

    # Redrive

    def start_redrive(
        self,
        project: str,
        dlq: str,
        destination: str | None = None,
        where: DeadLetterFilter | None = None,
        rate: float | None = None,
    ) -> RedriveTask:
        """Start moving dead letters back: to each one's source queue, or to `destination`."""
        where = where or DeadLetterFilter()
        if rate is not None and rate <= 0:
            raise errors.InvalidInput("the rate must be a positive number of messages per second")

        def work(tx: Transaction, _: _Pending) -> RedriveTask:
            self._queue(tx, project, dlq)
            if not tx.sources_of(project, dlq):
                raise errors.InvalidInput(f"{dlq!r} is not the dead-letter queue of any queue")
            if destination is not None:
                if destination == dlq:
                    raise errors.InvalidInput("a redrive cannot move messages into their own queue")
                self._queue(tx, project, destination)
                if destination in tx.dead_letter_targets(project):
                    raise errors.DeadLetterChainRefused(
                        f"{destination!r} is a dead-letter queue; redrive to a source queue"
                    )
            if any(t.dlq == dlq for t in self._active_tasks(tx, project)):
                raise errors.RedriveTaskActive(f"a redrive task is already running on {dlq!r}")
            now = self.clock.now()
            max_seq = tx.max_seq(project, dlq)
            task = RedriveTask(
                id=new_id(),
                project=project,
                dlq=dlq,
                destination=destination,
                filter=where,
                rate=rate,
                status=TaskStatus.RUNNING,
                moved=0,
                to_move=tx.count_dead_letters(project, dlq, now, where, max_seq),
                max_seq=max_seq,
                started_at=now,
                updated_at=now,
            )
            tx.insert_task(task)
            return task

        return self._run(work)

    def _active_tasks(self, tx: Transaction, project: str) -> list[RedriveTask]:
        tasks = (tx.get_task(task_id) for task_id in tx.active_task_ids())
        return [t for t in tasks if t is not None and t.project == project]

    def redrive_step(self, task_id: str, budget: int) -> RedriveTask:
        """Move up to `budget` messages of a running task, atomically with its progress.

        A task with a rate moves no more than its rate allows since its last step, whichever
        process steps it: the pace is kept in the task's row (see `_paced`).
        """

        def work(tx: Transaction, pending: _Pending) -> RedriveTask:
            task = tx.get_task(task_id, lock=True)
            if task is None:
                raise errors.TaskNotFound(f"redrive task {task_id!r} does not exist")
            now = self.clock.now()
            if task.status is TaskStatus.CANCELLING:
                task = replace(task, status=TaskStatus.CANCELLED, updated_at=now)
                tx.update_task(task)
                return task
            if task.status is not TaskStatus.RUNNING or budget <= 0:
                return task
            allowed, paced_to = _paced(task, now, budget)
            if allowed == 0:
                return task
            batch = tx.dead_letters(
                task.project, task.dlq, now, task.filter, task.max_seq, allowed, lock=True
            )
            if not batch:
                task = replace(task, status=TaskStatus.COMPLETED, updated_at=now)
                tx.update_task(task)
                return task
            destinations: dict[str, Queue] = {}
            fresh: list[Message] = []
            failure = None
            for m in batch:
                target = task.destination or (m.provenance.source_queue if m.provenance else None)
                if target is None:
                    failure = f"message {m.id} has no source queue; give a destination"
                elif target not in destinations:
                    queue = tx.get_queue(task.project, target)
                    if queue is None:
                        failure = f"queue {target!r} no longer exists"
                    else:
                        destinations[target] = queue
                if failure is not None or target is None:
                    break
                fresh.append(_redriven(m, destinations[target], task, now))
            if fresh:
                tx.delete_messages(task.project, task.dlq, [m.id for m in batch[: len(fresh)]])
                tx.insert_messages(task.project, fresh)
                for name in {m.queue for m in fresh}:
                    pending.available.add((task.project, name))
                count = len(fresh)
                project, dlq = task.project, task.dlq
                pending.calls.append(lambda lst: lst.redriven(project, dlq, task_id, count))
            task = replace(task, moved=task.moved + len(fresh), updated_at=paced_to(len(fresh)))
            if failure is not None:
                task = replace(task, status=TaskStatus.FAILED, failure_reason=failure)
            tx.update_task(task)
            return task

        return self._run(work)

    def cancel_redrive(self, project: str, dlq: str, task_id: str) -> RedriveTask:
        def work(tx: Transaction, _: _Pending) -> RedriveTask:
            task = _owned(tx.get_task(task_id, lock=True), project, dlq, task_id)
            if task.status is not TaskStatus.RUNNING:
                raise errors.TaskNotRunning(
                    f"redrive task {task_id!r} is {task.status.value}, not RUNNING"
                )
            task = replace(task, status=TaskStatus.CANCELLING, updated_at=self.clock.now())
            tx.update_task(task)
            return task

        return self._run(work)

    def get_task(self, project: str, dlq: str, task_id: str) -> RedriveTask:
        """A redrive task of `dlq`; a task of another queue or project is not found."""
        return _owned(self._run(lambda tx, _: tx.get_task(task_id)), project, dlq, task_id)

    def list_tasks(
        self, project: str, dlq: str | None = None, limit: int = 100
    ) -> list[RedriveTask]:
        return self._run(lambda tx, _: tx.list_tasks(project, dlq, limit))

    def active_task_ids(self) -> list[str]:
        return self._run(lambda tx, _: tx.active_task_ids())

    def list_dead_letters(
        self,
        project: str,
        dlq: str,
        where: DeadLetterFilter | None = None,
        after_seq: int = 0,
        limit: int = 100,
    ) -> list[Message]:
        """Browse a DLQ without consuming it, claimed messages included."""
        query = ListQuery(
            after_seq=after_seq,
            limit=limit,
            include_claimed=True,
            include_delayed=True,
            dead_letters=where or DeadLetterFilter(),
        )
        return self.list_messages(project, dlq, query)

    # Failure patterns from the analysis pipeline

    def save_patterns(self, project: str, dlq: str, patterns: list[dict[str, Any]]) -> None:
        def work(tx: Transaction, _: _Pending) -> None:
            self._queue(tx, project, dlq)
            tx.save_patterns(project, dlq, patterns)

        self._run(work)

    def pattern_message_ids(self, project: str, dlq: str, pattern_id: str) -> tuple[str, ...]:
        """The dead letters the analysis grouped under `pattern_id`, to redrive that pattern."""
        for pattern in self.get_patterns(project, dlq):
            if pattern.get("id") == pattern_id:
                return tuple(str(i) for i in pattern.get("message_ids") or [])
        raise errors.PatternNotFound(f"No stored pattern {pattern_id!r}.")

    def get_patterns(self, project: str, dlq: str) -> list[dict[str, Any]]:
        def work(tx: Transaction, _: _Pending) -> list[dict[str, Any]]:
            self._queue(tx, project, dlq)
            return tx.get_patterns(project, dlq)

        return self._run(work)

    def wipe(self) -> None:
        self._run(lambda tx, _: tx.wipe())


def _owned(task: RedriveTask | None, project: str, dlq: str, task_id: str) -> RedriveTask:
    if task is None or task.project != project or task.dlq != dlq:
        raise errors.TaskNotFound(f"redrive task {task_id!r} does not exist")
    return task


RATE_BURST_SECONDS = 1.0
TIME_SLACK_SECONDS = 1e-5


def _paced(task: RedriveTask, now: float, budget: int) -> tuple[int, Callable[[int], float]]:
    """How many messages a step may move now, and the task's new `updated_at` once it moved n.

    For a task with a rate, `updated_at` is the time up to which its allowance is spent: a step
    may move what accrued since (at most a second's worth), and advances it by n / rate. Every
    server process steps the same row under its lock, so together they keep to the rate.
    """
    if task.rate is None:
        return budget, lambda n: now
    rate = task.rate
    since = max(task.updated_at, now - RATE_BURST_SECONDS)
    # The slack absorbs float rounding of epoch-sized times (a few tenths of a microsecond).
    allowed = min(budget, int((now - since + TIME_SLACK_SECONDS) * rate))
    return allowed, lambda n: since + n / rate


def _may_delete(
    message: Message | None, message_id: str, claim_id: str | None, now: float, strict: bool
) -> bool | errors.DeadletterError:
    """Whether a consumer may delete `message` with `claim_id` (see `Engine.delete_message`)."""
    if message is None:
        return errors.MessageNotFound(f"message {message_id!r} does not exist")
    if claim_id is None:
        if message.is_claimed(now):
            return errors.MessageClaimed(
                f"message {message_id!r} is claimed; give its claim id to delete it"
            )
        return True
    if message.claim_id != claim_id or (strict and not message.is_claimed(now)):
        if strict:
            return errors.ClaimMismatch(
                f"claim {claim_id!r} is not the live claim of message {message_id!r}"
            )
        return False
    return True


def _check_range(what: str, value: int | float, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise errors.InvalidInput(f"{what} must be between {low} and {high}, not {value!r}")


def _check_attributes(attributes: dict[str, Attribute]) -> None:
    for name, attribute in attributes.items():
        if name.upper().startswith(RESERVED_ATTRIBUTE_PREFIX):
            raise errors.ReservedAttribute(
                f"attribute {name!r}: names starting with"
                f" {RESERVED_ATTRIBUTE_PREFIX!r} are reserved"
            )
        if not name:
            raise errors.InvalidInput("attribute names cannot be empty")
        if attribute.type.split(".", 1)[0] not in ATTRIBUTE_TYPES:
            raise errors.InvalidInput(
                f"attribute {name!r}: type must be String, Number or Binary, not {attribute.type!r}"
            )


def _expired_event(project: str, queue: str, count: int) -> Callable[[EngineListener], None]:
    return lambda listener: listener.expired(project, queue, count)


def _unclaimed(m: Message, now: float) -> Message:
    return replace(m, claim_id=None, claim_expires_at=None, visible_at=now)


def _redriven(m: Message, destination: Queue, task: RedriveTask, now: float) -> Message:
    """A dead letter sent back: a new message with a fresh attempt budget and its history."""
    event = {
        "event": "redriven",
        "at": now,
        "dlq": task.dlq,
        "queue": destination.name,
        "task_id": task.id,
    }
    return replace(
        m,
        id=new_id(),
        queue=destination.name,
        attributes={
            k: v
            for k, v in m.attributes.items()
            if not k.upper().startswith(RESERVED_ATTRIBUTE_PREFIX)
        },
        enqueued_at=now,
        expires_at=now + destination.settings.default_ttl,
        visible_at=now,
        claim_id=None,
        claim_expires_at=None,
        claim_count=0,
        first_claimed_at=None,
        provenance=None,
        history=(*m.history, event),
    )
