"""Consumer groups: where a group keeps its deliveries, the one thing that differs between them.

A queue's untagged consumers are its default group, whose deliveries are the message rows'
own claim columns; each consumer tag is a named group, whose deliveries are its states of the
messages it has touched (docs/architecture.md, *Consumer tags*). The steps a consumer takes
(claim, give-back, visibility, acknowledgement, dead-lettering, in `claims`, `visibility`,
`acknowledgements` and `dead_letters`) are written once against `ConsumerGroup`; a group
only reads and writes its deliveries, says when it is done with a message, and counts.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import replace

from deadletter.domain import routing
from deadletter.domain.model import Message, Queue
from deadletter.domain.policies import DeadLetterPolicy, RetryPolicy
from deadletter.domain.provenance import Reason
from deadletter.domain.tags import ConsumerTag, TagState
from deadletter.engine import counters, fifo, tags
from deadletter.engine.ids import new_id
from deadletter.engine.lookups import held_rows, live_messages
from deadletter.engine.transactions import Pending
from deadletter.storage.base import ClaimRecord, Transaction

# Reasons that end a message for every consumer group of its queue, not only the one that
# gave up: it expired, or a bounded queue pushed it out.
ENDS_FOR_EVERY_GROUP = (Reason.EXPIRED, Reason.MAXLEN)


class ConsumerGroup(abc.ABC):
    """One consumer group of `queue`; `tag` names it in dead letters' provenance (None: the
    default group)."""

    queue: Queue
    tag: str | None

    @abc.abstractmethod
    def claimable(self, tx: Transaction, now: float, limit: int) -> list[Message]:
        """What a claim of up to `limit` messages may take now, oldest first, as the group
        sees them, locked."""

    def skip_unmatched(self, tx: Transaction, found: list[Message]) -> list[Message]:
        """The claimable messages this group delivers; those it does not are done with."""
        return found

    def claim_ended(self, tx: Transaction) -> None:  # noqa: B027 - optional step
        """Called once a claim has taken what it will."""

    @abc.abstractmethod
    def hold(self, tx: Transaction, messages: Sequence[Message]) -> None:
        """Write the group's deliveries of `messages` (claimed, renewed, given back)."""

    def hold_claimed(
        self, tx: Transaction, messages: Sequence[Message], now: float, live_until: float
    ) -> None:
        """`hold` the messages one claim just took at `now` (`claims.claim`)."""
        self.hold(tx, messages)

    def takes_at_once(self) -> bool:
        """Whether `take` claims: the store then writes each message as `transitions.claimed`
        makes it, computed from its row (no retry backoff, no FIFO group to lock)."""
        return False

    def take(
        self, tx: Transaction, claim: ClaimRecord, *, now: float, limit: int, live_until: float
    ) -> list[Message]:
        """What `claimable` finds, already written as claimed by `claim` (recorded with
        them), as it was before; only where `takes_at_once`."""
        raise NotImplementedError

    @abc.abstractmethod
    def held(self, tx: Transaction, ids: Sequence[str], now: float) -> list[Message]:
        """The unexpired messages among `ids` that the group delivers now, their deliveries
        locked for a write that starts from them, oldest first."""

    @abc.abstractmethod
    def claimed_by(
        self, tx: Transaction, claim_id: str, now: float, lock: bool = False
    ) -> list[Message]:
        """The messages `claim_id` still holds in this group; with `lock`, for a write."""

    @abc.abstractmethod
    def acknowledgeable(self, tx: Transaction, ids: Sequence[str], now: float) -> list[Message]:
        """The messages among `ids` the group has not finished, locked as `held` locks."""

    def acknowledge_at_once(
        self, tx: Transaction, ids: Sequence[str], claim_id: str, now: float, strict: bool
    ) -> set[str]:
        """Those of `ids` acknowledged under `claim_id` in one statement, where the group can."""
        return set()

    @abc.abstractmethod
    def finish(self, tx: Transaction, messages: Sequence[Message]) -> int:
        """The group is done with `messages` (acknowledged); how many."""

    @abc.abstractmethod
    def acknowledged(self, tx: Transaction, pending: Pending, count: int) -> None:
        """Count `count` acknowledgements and tell the listeners once committed."""

    @abc.abstractmethod
    def to_dead_letter_queue(
        self,
        tx: Transaction,
        pending: Pending,
        messages: Sequence[Message],
        dead: list[Message],
        reason: Reason,
    ) -> list[Message]:
        """Write `dead` (`messages` as dead letters, in order) to the DLQ, the group done with
        `messages`, and count them; the dead letters as stored."""

    @abc.abstractmethod
    def drop(
        self, tx: Transaction, pending: Pending, messages: Sequence[Message], reason: Reason
    ) -> None:
        """The group gives up `messages`, past the limit of `reason` but not eligible for
        the DLQ: counted, never silently."""

    def claimed(self, pending: Pending, count: int) -> None:
        project, name = self.queue.project, self.queue.name
        pending.calls.append(lambda lst: lst.claimed(project, name, count))

    def policy(self, reason: Reason) -> DeadLetterPolicy | None:
        """The policy under which the group dead-letters for `reason` (`domain.routing`)."""
        return routing.policy_for(self.queue.settings, self.tag, reason)

    def retry(self) -> RetryPolicy | None:
        """The group's retry backoff: a tag's own, else the queue's."""
        return routing.retry_for(self.queue.settings, self.tag)


class DefaultGroup(ConsumerGroup):
    """The queue's untagged consumers, on the message rows. On a queue with tags a message
    they are done with stays for the tags (`tags.finish_default`)."""

    def __init__(self, queue: Queue) -> None:
        self.queue, self.tag = queue, None

    def claimable(self, tx: Transaction, now: float, limit: int) -> list[Message]:
        return fifo.claimable(tx, self.queue, now, limit)

    def hold(self, tx: Transaction, messages: Sequence[Message]) -> None:
        tx.update_messages(self.queue.project, messages)

    def hold_claimed(
        self, tx: Transaction, messages: Sequence[Message], now: float, live_until: float
    ) -> None:
        # The common claim, one statement for all its messages instead of one per message:
        # the store can compute each message's new state from its row when they are claimed
        # alike (no backoff that depends on the delivery count, none at its last delivery).
        if self.queue.settings.retry_policy is None and all(
            m.dead_letter_due_at is None for m in messages
        ):
            tx.claim_messages(self.queue.project, messages, now, live_until)
        else:
            self.hold(tx, messages)

    def takes_at_once(self) -> bool:
        s = self.queue.settings
        return not s.fifo and s.retry_policy is None

    def take(
        self, tx: Transaction, claim: ClaimRecord, *, now: float, limit: int, live_until: float
    ) -> list[Message]:
        return tx.claim_next(claim, now=now, limit=limit, live_until=live_until)

    def held(self, tx: Transaction, ids: Sequence[str], now: float) -> list[Message]:
        return held_rows(tx, self.queue.project, self.queue.name, ids, now)

    def claimed_by(
        self, tx: Transaction, claim_id: str, now: float, lock: bool = False
    ) -> list[Message]:
        return live_messages(
            tx, self.queue.project, self.queue.name, claim_id=claim_id, now=now, lock=lock
        )

    def acknowledgeable(self, tx: Transaction, ids: Sequence[str], now: float) -> list[Message]:
        return tags.not_done_by_default(self.held(tx, ids, now))

    def acknowledge_at_once(
        self, tx: Transaction, ids: Sequence[str], claim_id: str, now: float, strict: bool
    ) -> set[str]:
        if self.queue.settings.consumer_tags:
            return set()
        # The statement applies `acknowledgeable` and `transitions.may_delete` itself.
        return set(tx.delete_held(self.queue.project, self.queue.name, ids, claim_id, now, strict))

    def finish_ids(self, tx: Transaction, ids: Sequence[str]) -> int:
        """`finish` the messages of `ids` the group is not done with, whatever their claims."""
        q = self.queue
        if q.settings.consumer_tags:
            return self.finish(
                tx, tags.not_done_by_default(tx.get_messages(q.project, q.name, ids))
            )
        return tx.delete_unfinished(q.project, q.name, ids)  # both steps in one statement

    def finish(self, tx: Transaction, messages: Sequence[Message]) -> int:
        if self.queue.settings.consumer_tags:
            tags.finish_default(tx, self.queue, messages)
            return len({m.id for m in messages})
        return tx.delete_messages(self.queue.project, self.queue.name, [m.id for m in messages])

    def acknowledged(self, tx: Transaction, pending: Pending, count: int) -> None:
        project, name = self.queue.project, self.queue.name
        tx.bump_counter(project, name, counters.ACKNOWLEDGED, count)
        pending.calls.append(lambda lst: lst.acknowledged(project, name, count))

    def to_dead_letter_queue(
        self,
        tx: Transaction,
        pending: Pending,
        messages: Sequence[Message],
        dead: list[Message],
        reason: Reason,
    ) -> list[Message]:
        source = self.queue
        if source.settings.consumer_tags and reason not in ENDS_FOR_EVERY_GROUP:
            dead = _copies(tx, source, dead)  # the message stays for the tags
            tags.finish_default(tx, source, messages)
        else:  # expiry and drop-head end a message for every group
            tx.move_messages(source.project, dead)
            if source.settings.consumer_tags:
                tx.forget_tag_states([m.id for m in messages])
        tx.bump_counter(source.project, source.name, counters.dead_lettered(reason), len(dead))
        return dead

    def drop(
        self, tx: Transaction, pending: Pending, messages: Sequence[Message], reason: Reason
    ) -> None:
        project, name = self.queue.project, self.queue.name
        if self.queue.settings.consumer_tags and reason not in ENDS_FOR_EVERY_GROUP:
            # Given up by the untagged consumers only: still there for the tags.
            tags.finish_default(tx, self.queue, messages)
            tx.bump_counter(project, name, counters.dropped(reason), len(messages))
            return
        count = tx.delete_messages(project, name, [m.id for m in messages])
        tx.bump_counter(project, name, counters.dropped(reason), count)
        pending.calls.append(lambda lst: lst.dropped(project, name, reason.value, count))


class TagGroup(ConsumerGroup):
    """A consumer tag, on its states of the messages it has touched; messages are handled as
    the tag sees them (`domain.tags.seen_by_tag`), so the transitions serve it unchanged. Its
    dead letters are copies: the message stays in its queue for the others."""

    def __init__(self, queue: Queue, name: str, stored: ConsumerTag | None = None) -> None:
        self.queue, self.tag, self.name, self._stored = queue, name, name, stored

    @property
    def stored(self) -> ConsumerTag:
        assert self._stored is not None, "read by `of`"
        return self._stored

    def claimable(self, tx: Transaction, now: float, limit: int) -> list[Message]:
        return [m for m, _ in tx.tag_claimable(self.stored, now, limit)]

    def skip_unmatched(self, tx: Transaction, found: list[Message]) -> list[Message]:
        skipped = [m for m in found if not self.stored.matches(m)]
        if skipped:
            self._save(tx, skipped, TagState.SKIPPED)
            tags.settle(tx, self.queue, [m.id for m in skipped])
        return [m for m in found if self.stored.matches(m)]

    def claim_ended(self, tx: Transaction) -> None:
        tx.advance_tag_cursor(self.stored)

    def hold(self, tx: Transaction, messages: Sequence[Message]) -> None:
        self._save(tx, messages, TagState.LIVE)
        # A claim keeps its message alive for every group, as the default group's does.
        tx.extend_lives(self.queue.project, [m for m in messages if m.claim_id is not None])

    def held(self, tx: Transaction, ids: Sequence[str], now: float) -> list[Message]:
        views = self._views(tx, ids)
        return [m for m, state in views if m.expires_at > now and state is TagState.LIVE]

    def claimed_by(
        self, tx: Transaction, claim_id: str, now: float, lock: bool = False
    ) -> list[Message]:
        q = self.queue
        found = tx.tag_claimed_by(q.project, q.name, self.name, claim_id, lock=lock)
        return [m for m in found if m.is_claimed(now)]

    def acknowledgeable(self, tx: Transaction, ids: Sequence[str], now: float) -> list[Message]:
        return [
            m
            for m, state in self._views(tx, ids)
            if m.expires_at > now and (state is None or not state.final) and self.stored.sees(m)
        ]

    def finish(self, tx: Transaction, messages: Sequence[Message]) -> int:
        self._save(tx, messages, TagState.ACKNOWLEDGED)
        tags.settle(tx, self.queue, [m.id for m in messages])
        return len(messages)

    def acknowledged(self, tx: Transaction, pending: Pending, count: int) -> None:
        project, name = self.queue.project, self.queue.name
        tx.bump_counter(project, name, tags.acknowledged_counter(self.name), count)
        pending.calls.append(lambda lst: lst.acknowledged(project, name, count))
        self._event(pending, "acknowledged", count)

    def to_dead_letter_queue(
        self,
        tx: Transaction,
        pending: Pending,
        messages: Sequence[Message],
        dead: list[Message],
        reason: Reason,
    ) -> list[Message]:
        copies = _copies(tx, self.queue, dead)
        self._given_up(tx, pending, messages)
        return copies

    def drop(
        self, tx: Transaction, pending: Pending, messages: Sequence[Message], reason: Reason
    ) -> None:
        self._given_up(tx, pending, messages)

    def claimed(self, pending: Pending, count: int) -> None:
        super().claimed(pending, count)
        self._event(pending, "claimed", count)

    def _given_up(self, tx: Transaction, pending: Pending, messages: Sequence[Message]) -> None:
        """The tag is done with `messages` as dead letters (copied or not)."""
        project, name = self.queue.project, self.queue.name
        self._save(tx, messages, TagState.DEAD_LETTERED)
        tx.bump_counter(project, name, tags.dead_lettered_counter(self.name), len(messages))
        tags.settle(tx, self.queue, [m.id for m in messages])
        self._event(pending, "dead_lettered", len(messages))

    def _views(self, tx: Transaction, ids: Sequence[str]) -> list[tuple[Message, TagState | None]]:
        # Locked: a give-back and a new claim committed meanwhile must not be written over.
        return tx.tag_messages(self.queue.project, self.queue.name, self.name, ids, lock=True)

    def _save(self, tx: Transaction, messages: Sequence[Message], state: TagState) -> None:
        tx.save_tag_states(self.queue.project, self.queue.name, self.name, messages, state)

    def _event(self, pending: Pending, event: str, count: int) -> None:
        project, name, tag = self.queue.project, self.queue.name, self.name
        pending.calls.append(lambda lst: lst.tag_delivery(project, name, tag, event, count))


def _copies(tx: Transaction, source: Queue, dead: Sequence[Message]) -> list[Message]:
    """`dead` stored as new messages of the DLQ, with new ids: the originals stay."""
    copies = [replace(m, id=new_id()) for m in dead]
    tx.insert_messages(source.project, copies)
    return copies


def of(tx: Transaction, queue: Queue, tag: str | None, lock: bool = False) -> ConsumerGroup:
    """The group `tag` names (None: the default group), which must exist. With `lock`, the
    tag's row is locked, so the tag's claimants take turns and never hand out a message twice
    (the default group's claimants skip each other's rows instead)."""
    if tag is None:
        return DefaultGroup(queue)
    return TagGroup(queue, tag, tags.require_tag(tx, queue.project, queue.name, tag, lock))


def named(queue: Queue, tag: str | None) -> ConsumerGroup:
    """The group `tag` names, unread: enough for the steps on messages it holds (a tag that
    does not exist holds none)."""
    return DefaultGroup(queue) if tag is None else TagGroup(queue, tag)
