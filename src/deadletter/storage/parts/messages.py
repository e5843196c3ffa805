"""Messages, their claims and FIFO groups: insert, pick, move, delete, redrive in place."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deadletter.domain.model import DeadLetterFilter, ListQuery, Message
from deadletter.domain.provenance import Provenance


@dataclass(frozen=True)
class ClaimRecord:
    id: str
    project: str
    queue: str
    ttl: int
    grace: int
    created_at: float
    expires_at: float


class Messages(abc.ABC):
    """Messages, their claims and FIFO groups: insert, pick, move, delete, redrive in place."""

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
    def lock_messages(self, ids: Sequence[str]) -> list[Message]:
        """The messages among `ids`, locked until this transaction ends (waiting for others)."""

    @abc.abstractmethod
    def claimable(self, project: str, queue: str, now: float, limit: int) -> list[Message]:
        """Visible, unexpired messages, oldest first, locked against other claimants."""

    @abc.abstractmethod
    def list_messages(
        self, project: str, queue: str, now: float, query: ListQuery
    ) -> list[Message]:
        """Never one numbered above a message of the queue still being sent, so that a
        listing's marker skips nothing; a store may wait for those senders to finish."""

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
    def dead_letter_provenances(
        self,
        project: str,
        dlq: str,
        now: float,
        where: DeadLetterFilter,
        max_seq: int,
        limit: int,
        after_seq: int,
    ) -> list[tuple[str, int, Provenance | None]]:
        """(id, seq, provenance) of what `dead_letters` would return, unlocked: what a
        canary's draw reads of each (its error), without the bodies and histories."""

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
    def max_seq(self, project: str, queue: str) -> int: ...

    @abc.abstractmethod
    def oldest(self, project: str, queue: str, now: float, after: int, limit: int) -> list[Message]:
        """Up to `limit` of `queue`'s unexpired messages numbered above `after`, oldest first,
        whatever their state, locked for a write."""

    @abc.abstractmethod
    def update_messages(self, project: str, messages: Sequence[Message]) -> None:
        """Write back delivery state: visibility, claim, claim count, first claim, expiry."""

    @abc.abstractmethod
    def claim_messages(
        self, project: str, messages: Sequence[Message], now: float, live_until: float
    ) -> None:
        """Write back `messages` as `transitions.claimed` made them, all by one claim at `now`
        without a retry backoff and none at its last delivery (living at least until
        `live_until`), in one statement: what `update_messages` writes, computed by the
        store from each row as it is."""

    @abc.abstractmethod
    def claim_next(
        self, claim: ClaimRecord, *, now: float, limit: int, live_until: float
    ) -> list[Message]:
        """`claimable` and `claim_messages` of what it finds, one step where the store can:
        up to `limit` messages of the claim's queue written as claimed by `claim` (recorded
        once, with the first it takes), returned as they were before, oldest first, so that
        the engine decides from them what the claim hands out and what leaves for the DLQ."""

    @abc.abstractmethod
    def move_messages(self, project: str, messages: Sequence[Message]) -> None:
        """Write back whole messages whose `queue` changed, giving each a new sequence number."""

    @abc.abstractmethod
    def edit_messages(self, project: str, messages: Sequence[Message]) -> None:
        """Write back the body, attributes and history of messages edited where they are:
        their place, state and counts stay."""

    @abc.abstractmethod
    def extend_lives(self, project: str, messages: Sequence[Message]) -> None:
        """Each message's row lives at least until the message's `expires_at`, as a tag's
        claim set it (the row is every group's: it is only ever made to live longer)."""

    @abc.abstractmethod
    def delete_messages(self, project: str, queue: str, ids: Sequence[str]) -> int: ...

    @abc.abstractmethod
    def delete_unfinished(self, project: str, queue: str, ids: Sequence[str]) -> int:
        """Delete the messages among `ids` that the queue's untagged consumers are not done
        with (`domain.tags.default_done`), whatever their claims, in one statement; how many."""

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

    # FIFO queues (the rules are deadletter.engine.fifo's)
    @abc.abstractmethod
    def fifo_candidates(
        self, project: str, queue: str, now: float, limit: int, groups: Sequence[str] | None = None
    ) -> list[Message]:
        """Visible, unexpired messages of groups with nothing in flight, with no hidden
        message of their group before them, oldest first; not locked. With `groups`, those
        of these groups only, read anew and locked (a claim, once it holds the groups)."""

    @abc.abstractmethod
    def add_fifo_groups(self, project: str, queue: str, groups: Sequence[str]) -> None:
        """Make the rows that claims lock for these groups, where missing."""

    @abc.abstractmethod
    def lock_fifo_groups(self, project: str, queue: str, groups: Sequence[str]) -> list[str]:
        """Lock the groups until commit, skipping (and leaving out) those another
        transaction holds; a group without its row gets one first."""

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
