"""Every queue operation and every dead-letter rule, written once, above the storage interface.

`Engine` is the one façade the faces call (its redrive, DLQ-browsing, pattern and credential
operations are inherited from `dead_letter_operations`, its claim operations from
`claim_operations`, its consumer-tag operations from `tag_operations`). Each operation runs
as one transaction (see `transactions`), a read-only one where it only reads; the rules it
applies live beside it:
`validation` checks what comes in, `transitions` moves a message from one state to the next,
and `queues`, `claims`, `visibility`, `dead_letters`, `expiry` and `redrive` do the work
inside the transaction, given the `tx`.
None of them opens a transaction of its own: an operation that builds on another
(`get_message`, `delete_message`, `change_visibility`, `list_dead_letters`) calls it outside
any transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Any, TypeVar

from deadletter.clock import Clock, SystemClock
from deadletter.domain import errors
from deadletter.domain.model import (
    DEFAULT_QUEUE_QUOTA,
    ListQuery,
    Message,
    NewMessage,
    Queue,
    QueueSettings,
    QueueStats,
)
from deadletter.engine import (
    acknowledgements,
    bounds,
    dead_letters,
    expiry,
    fifo,
    groups,
    queues,
    templates,
    transitions,
    validation,
)
from deadletter.engine.claim_operations import ClaimOperations
from deadletter.engine.dead_letter_operations import DeadLetterOperations
from deadletter.engine.events import EngineListener
from deadletter.engine.failure_groups import FailureGroupOperations
from deadletter.engine.fan_out import fan_out
from deadletter.engine.ids import new_id
from deadletter.engine.lookups import require_queue
from deadletter.engine.subscriptions import Subscriptions
from deadletter.engine.tag_operations import TagOperations
from deadletter.engine.transactions import Pending, Runner
from deadletter.storage.base import Deferred, Outage, Store, Transaction

T = TypeVar("T")


class Engine(DeadLetterOperations, FailureGroupOperations, TagOperations, ClaimOperations):
    def __init__(
        self,
        store: Store,
        clock: Clock | None = None,
        listeners: Iterable[EngineListener] = (),
        queue_quota: int | None = DEFAULT_QUEUE_QUOTA,
    ) -> None:
        """`queue_quota`: the most queues one project may hold (None: no limit)."""
        self.store = store
        self.clock = clock or SystemClock()
        self.queue_quota = queue_quota
        # The log of dead letters that expire is the engine's own: a lost dead letter is
        # logged whoever else listens.
        self._runner = Runner(store, [expiry.DeadLetterExpiryLog(), *listeners])
        self.listeners: list[EngineListener] = self._runner.listeners
        self._run = self._runner.run
        self.templates = templates.Templates(self._runner, self.clock, queue_quota)
        self._read = self._runner.read
        store.on_messages_available(self._runner.available)
        self.subscriptions = Subscriptions(self._run, self.clock)

    def add_listener(self, listener: EngineListener) -> None:
        self.listeners.append(listener)

    def run_now(self, work: Callable[[], T]) -> Deferred[T] | None:
        """`work`, calls of this engine whose size the request bounds (a batch of messages),
        run at once on this thread if the store can run them without waiting; their commits
        and then their events follow, as the `Deferred` tells. None, `work` not run, if the
        store would wait (`Store.run_now`)."""
        return self.store.run_now(work)

    @property
    def runs_now(self) -> bool:
        """Whether `run_now` ever runs work at once (`Store.runs_now`)."""
        return self.store.runs_now

    @property
    def runs_together(self) -> bool:
        """Whether `run_together` runs several works in one transaction."""
        return self.store.runs_together

    def run_together(
        self, works: Sequence[Callable[[], Any]], *, ran: Callable[[], None] = lambda: None
    ) -> list[Deferred[Any] | None]:
        """`works`, calls of this engine of bounded size, in one transaction of the store
        with one commit; None for each to run again alone (`Store.run_together`)."""
        return self.store.run_together(works, ran=ran)

    async def run_together_on_loop(
        self, works: Sequence[Callable[[], Any]], *, ran: Callable[[], None] = lambda: None
    ) -> list[Deferred[Any] | None]:
        """`run_together` from the event loop's thread, never blocking it
        (`Store.run_together_on_loop`)."""
        return await self.store.run_together_on_loop(works, ran=ran)

    def commit_now(self) -> None:
        """`Store.commit_now`: commit what `run_now` left to commit."""
        self.store.commit_now()

    def when_store_free(self, wake: Callable[[], None]) -> bool:
        """`Store.when_free`: `wake()` once `run_now` may run work at once again."""
        return self.store.when_free(wake)

    def hear_other_processes(self) -> Future[None] | None:
        """Other processes' sends announced to the listeners too, until the matching
        `stop_hearing_other_processes` (`Store.hear_other_processes`)."""
        return self.store.hear_other_processes()

    def stop_hearing_other_processes(self) -> None:
        self.store.stop_hearing_other_processes()

    def store_outage(self) -> Outage | None:
        """Why and since when the store has been refusing work; None while it answers."""
        return self.store.availability.outage

    @property
    def listener_failures(self) -> int:
        """How many listener calls raised; each was logged, none reached the caller."""
        return self._runner.failures

    # Queues

    def create_queue(
        self, project: str, name: str, *, settings: QueueSettings | None = None
    ) -> Queue:
        checked = settings or QueueSettings()
        return self._run(
            lambda tx, _: queues.create(
                tx, project, name, settings=checked, now=self.clock.now(), quota=self.queue_quota
            )
        )

    def get_queue(self, project: str, name: str) -> Queue:
        return self._read(lambda tx: require_queue(tx, project, name))

    def find_queue(self, project: str, name: str) -> Queue | None:
        return self._read(lambda tx: tx.get_queue(project, name))

    def update_queue(self, project: str, name: str, *, settings: QueueSettings) -> Queue:
        return self.change_settings(project, name, change=lambda _: settings)

    def change_settings(
        self, project: str, name: str, *, change: Callable[[Queue], QueueSettings]
    ) -> Queue:
        """Read a queue's settings, apply `change` and write the result in one transaction, so
        two concurrent changes (a tag here, an attribute there) never lose one another.
        `change` may raise to refuse; nothing is written then."""

        def work(tx: Transaction, pending: Pending) -> Queue:
            old = require_queue(tx, project, name, lock=True)
            now = self.clock.now()
            # The tags and their policies are the tag operations' to change, whatever a face
            # sends.
            changed = replace(
                change(old),
                consumer_tags=old.settings.consumer_tags,
                tag_policies=old.settings.tag_policies,
            )
            checked = queues.checked(tx, project, name, changed, now)
            tx.update_queue(project, name, checked, now)
            queue = replace(old, settings=checked, updated_at=now)
            # A drop-head bound lowered below what the queue holds pushes the oldest out now,
            # as RabbitMQ does when a policy lowers x-max-length (a full DLQ keeps them here).
            dead_letters.drop_head(tx, pending, queue, now, refuse=False)
            return queue

        return self._run(work)

    def delete_queue(self, project: str, name: str, *, force: bool = False) -> bool:
        """Delete a queue and its messages. A DLQ that other queues name is deleted only with
        `force` (DeadLetterQueueInUse names them otherwise): their messages go on being
        delivered, without a limit, as their policy turns inactive."""
        now = self.clock.now()
        return self._run(lambda tx, _: queues.delete(tx, project, name, now, force))

    def list_queues(
        self, project: str, *, prefix: str | None = None, after: str | None = None, limit: int = 10
    ) -> list[Queue]:
        return self._read(lambda tx: tx.list_queues(project, prefix, after, limit))

    def stats(self, project: str, name: str) -> QueueStats:
        return self._read(lambda tx: queues.stats(tx, project, name, self.clock.now()))

    def next_visible_in(self, project: str, name: str) -> float | None:
        """Seconds until the queue's next claimed or delayed message becomes visible (a
        visibility timeout or a delay ending), None when none is hidden. Long polls wait for
        this as well as for new messages, which announce themselves."""
        now = self.clock.now()
        at = self._read(lambda tx: tx.next_visible(project, name, now))
        return None if at is None else max(0.0, at - now)

    def purge(self, project: str, name: str, *, force: bool = False) -> int:
        """Delete every message of the queue; the dead letters of a DLQ that other queues
        name only with `force` (DeadLetterQueueInUse names them otherwise)."""

        def work(tx: Transaction, _: Pending) -> int:
            require_queue(tx, project, name)
            if not force:
                queues.refuse_in_use(
                    tx, project, name, "purging", "would delete the dead letters they sent it"
                )
            return tx.purge(project, name)

        return self._run(work)

    # Messages

    def send(
        self,
        project: str,
        queue_name: str,
        *,
        messages: Sequence[NewMessage],
        client_id: str | None = None,
    ) -> list[Message]:
        if not messages:
            raise errors.InvalidInput("no messages to send")
        return self.send_prepared(
            project, queue_name, prepare=lambda _: messages, client_id=client_id
        )[1]

    def send_prepared(
        self,
        project: str,
        queue_name: str,
        *,
        prepare: Callable[[Queue], Sequence[NewMessage]],
        client_id: str | None = None,
    ) -> tuple[Queue, list[Message]]:
        """Send what `prepare` makes of the queue, in the transaction that reads the queue: a
        face whose checks depend on the queue's settings needs no transaction of its own to
        read them first. `prepare` may raise to refuse (nothing is written) or return no
        messages (nothing is sent). A bounded queue that refuses the send raises `QueueFull`
        for all of it, once what its overflow policy dead-letters has committed."""
        queue, outcomes, full = self._send(project, queue_name, prepare, client_id, each=False)
        if full is not None:
            raise full
        return queue, [m for m in outcomes if isinstance(m, Message)]

    def send_each(
        self,
        project: str,
        queue_name: str,
        *,
        prepare: Callable[[Queue], Sequence[NewMessage]],
        client_id: str | None = None,
    ) -> tuple[Queue, list[Message | errors.QueueFull]]:
        """`send_prepared` whose messages a bounded queue takes or refuses one by one (an SQS
        batch's entries): per message, the stored one or why it was refused."""
        queue, outcomes, _ = self._send(project, queue_name, prepare, client_id, each=True)
        return queue, outcomes

    def _send(
        self,
        project: str,
        queue_name: str,
        prepare: Callable[[Queue], Sequence[NewMessage]],
        client_id: str | None,
        each: bool,
    ) -> tuple[Queue, list[Message | errors.QueueFull], errors.QueueFull | None]:
        def work(
            tx: Transaction, pending: Pending
        ) -> tuple[Queue, list[Message | errors.QueueFull], errors.QueueFull | None]:
            queue = require_queue(tx, project, queue_name)
            if queue.settings.bounded:
                # Senders to a bounded queue take turns (engine.bounds): the count each reads
                # stays true until it commits.
                queue = require_queue(tx, project, queue_name, lock=True)
            messages = prepare(queue)
            if not messages:
                return queue, [], None
            s = queue.settings
            now = self.clock.now()
            built = []
            for new in messages:
                ttl, delay, eligible = validation.checked_send(new, s)
                m = transitions.enqueued(
                    new,
                    message_id=new_id(),
                    queue=queue_name,
                    now=now,
                    ttl=ttl,
                    delay=delay,
                    eligible=eligible,
                    client_id=client_id,
                )
                built.append(fifo.enqueued(new, m, s))
            taken, full = bounds.admit(tx, queue, built, now, each)
            if full is not None:
                kept = set(taken)
                left = [m for i, m in enumerate(built) if i not in kept]
                dead_letters.refused_send(tx, pending, queue, left, now)  # reject-publish-dlx
            # Each position that is not taken holds the refusal.
            outcomes: list[Message | errors.QueueFull] = [full or errors.QueueFull()] * len(built)
            if not taken:
                return queue, outcomes, full
            # FIFO: no duplicates
            stored, enqueued = fifo.stored(tx, project, s, [built[i] for i in taken], now)
            for i, m in zip(taken, stored, strict=True):
                outcomes[i] = m
            dead_letters.drop_head(tx, pending, queue, now)
            due = fan_out(
                tx,
                project,
                queue_name,
                messages=enqueued,
                now=now,
                confirmed_only=self.subscriptions.require_confirmation,
            )
            pending.available.add((project, queue_name))
            pending.calls.append(lambda lst: lst.sent(project, queue_name, len(enqueued)))
            if due:
                pending.calls.append(lambda lst: lst.notifications_due(project, queue_name, due))
            return queue, outcomes, full

        return self._run(work)

    def list_messages(self, project: str, queue: str, *, query: ListQuery) -> list[Message]:
        def work(tx: Transaction) -> list[Message]:
            require_queue(tx, project, queue)
            return tx.list_messages(project, queue, self.clock.now(), query)

        return self._read(work)

    def newest_seq(self, project: str, queue: str) -> int:
        """The sequence number of the newest message `queue` holds (0 for none): a listing
        after it shows only what is sent from now on, as a subscription of a socket does."""
        return self._read(lambda tx: tx.max_seq(project, queue))

    def get_messages(self, project: str, queue: str, *, ids: Sequence[str]) -> list[Message]:
        """The unexpired messages among `ids`; missing ones are left out."""

        def work(tx: Transaction) -> list[Message]:
            require_queue(tx, project, queue)
            now = self.clock.now()
            return [m for m in tx.get_messages(project, queue, ids) if m.expires_at > now]

        return self._read(work)

    def get_message(self, project: str, queue: str, *, message_id: str) -> Message:
        found = self.get_messages(project, queue, ids=[message_id])
        if not found:
            raise errors.MessageNotFound(f"message {message_id!r} does not exist")
        return found[0]

    def delete_message(
        self,
        project: str,
        queue: str,
        *,
        message_id: str,
        claim_id: str | None = None,
        strict: bool = True,
        tag: str | None = None,
    ) -> bool:
        """Acknowledge one message.

        Without `claim_id` a claimed message is refused. With it, the id must match the
        message's claim: under `strict` (Zaqar) a wrong or expired claim is an error; otherwise
        (SQS receipt handles) a message claimed since by someone else is left alone and False
        is returned.
        """

        (deleted,) = self.delete_held(
            project, queue, held=[(message_id, claim_id)], strict=strict, tag=tag
        )
        if isinstance(deleted, errors.DeadletterError):
            raise deleted
        return deleted

    def delete_held(
        self,
        project: str,
        queue: str,
        *,
        held: Sequence[tuple[str, str | None]],
        strict: bool = True,
        tag: str | None = None,
    ) -> list[bool | errors.DeadletterError]:
        """Acknowledge several (message id, claim id) pairs in one transaction, each by the
        rules of `delete_message`; per pair, whether it was deleted or why it was refused.
        With `tag`, for that consumer tag only."""
        return self.acknowledge(
            project, queue, held=[(mid, cid, tag) for mid, cid in held], strict=strict
        )

    def acknowledge(
        self,
        project: str,
        queue: str,
        *,
        held: Sequence[tuple[str, str | None, str | None]],
        strict: bool = True,
    ) -> list[bool | errors.DeadletterError]:
        """`delete_held` of (message id, claim id, consumer tag) triples, each for its tag
        (None: the untagged consumers), all in one transaction."""

        def work(tx: Transaction, pending: Pending) -> list[bool | errors.DeadletterError]:
            source = require_queue(tx, project, queue)
            now = self.clock.now()
            by_tag: dict[str | None, list[int]] = {}
            for i, (_, _, tag) in enumerate(held):
                by_tag.setdefault(tag, []).append(i)
            results: dict[int, bool | errors.DeadletterError] = {}
            for tag, where in by_tag.items():
                group = groups.of(tx, source, tag)
                pairs = [(held[i][0], held[i][1]) for i in where]
                got = acknowledgements.acknowledge(
                    tx, pending, group, held=pairs, now=now, strict=strict
                )
                results.update(zip(where, got, strict=True))
            return [results[i] for i in range(len(held))]

        return self._run(work)

    def delete_messages(self, project: str, queue: str, *, ids: Sequence[str]) -> int:
        """Delete by ids whatever their claims (Zaqar's bulk delete)."""

        def work(tx: Transaction, pending: Pending) -> int:
            group = groups.DefaultGroup(require_queue(tx, project, queue))
            gone = group.finish_ids(tx, ids)
            if gone:
                group.acknowledged(tx, pending, gone)
            return gone

        return self._run(work)

    def pop(self, project: str, queue: str, *, limit: int) -> list[Message]:
        """Take and delete up to `limit` visible messages, oldest first."""

        def work(tx: Transaction, pending: Pending) -> list[Message]:
            group = groups.DefaultGroup(require_queue(tx, project, queue))
            taken = group.claimable(tx, self.clock.now(), limit)
            if taken:
                group.finish(tx, taken)
                group.acknowledged(tx, pending, len(taken))
            return taken

        return self._run(work)

    # Expiry

    def sweep_expired(self, limit: int = expiry.SWEEP_BATCH) -> int:
        """Drop expired messages, or dead-letter them where the queue asks for it; how many
        were found (`limit` means there may be more)."""
        return self._run(lambda tx, pending: expiry.sweep(tx, pending, self.clock.now(), limit))

    def wipe(self) -> None:
        self._run(lambda tx, _: tx.wipe())
