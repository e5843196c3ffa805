"""Consumer tags: named consumer groups on one queue, each with its own deliveries.

A tag receives every message of its queue that was sent after its start (and, with a filter,
whose attribute has the filter's value), and keeps its own claims, claim counts and dead
letters. The queue's untagged consumers are the default group and keep the message's own
delivery state; a tag's state for a message exists only once the tag has touched it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from deadletter.domain.limits import limit
from deadletter.domain.model import Message

MAX_TAGS_PER_QUEUE = limit("tags_per_queue")
# `visible_at` of a message that the default group is done with while tags still need it: far
# beyond any claim, so that the default group's claims never see it (year 9999).
DEFAULT_DONE_AT = 253_402_300_799.0


class TagState(enum.StrEnum):
    """Where a message is for one tag, once the tag has touched it."""

    LIVE = "live"  # delivered at least once, claimed now or waiting to be claimed again
    ACKNOWLEDGED = "acknowledged"
    DEAD_LETTERED = "dead_lettered"
    SKIPPED = "skipped"  # its attribute does not match the tag's filter

    @property
    def final(self) -> bool:
        return self is not TagState.LIVE


@dataclass(frozen=True)
class ConsumerTag:
    """A tag as stored. `start_seq` and `start_at` bound what it sees (sequence numbers above
    the one, enqueue times from the other); `cursor_seq` is how far every message has a state
    for it, so that its claims read on from there."""

    project: str
    queue: str
    name: str
    created_at: float
    start_seq: int
    start_at: float
    filter_attribute: str | None = None
    filter_value: str | None = None
    cursor_seq: int = 0

    def sees(self, m: Message) -> bool:
        """Whether `m` is one this tag must deliver (filter included)."""
        if m.only_tag is not None and m.only_tag != self.name:
            return False
        if m.seq <= self.start_seq or m.enqueued_at < self.start_at:
            return False
        return self.matches(m)

    def matches(self, m: Message) -> bool:
        if self.filter_attribute is None:
            return True
        attribute = m.attributes.get(self.filter_attribute)
        return attribute is not None and attribute.value == self.filter_value


@dataclass(frozen=True)
class TagCounts:
    """A tag's messages by state. `ready` counts messages the tag may claim now (those its
    filter will skip included, until a claim has looked at them); `acknowledged` and
    `dead_lettered` are totals since the tag was created."""

    ready: int
    claimed: int
    acknowledged: int
    dead_lettered: int


def default_done(m: Message) -> bool:
    """Whether the queue's untagged consumers are done with `m` (or never were meant to see it)."""
    return m.only_tag is not None or m.visible_at >= DEFAULT_DONE_AT


@dataclass(frozen=True)
class Delivery:
    """A tag's delivery state of one message, as stored (None fields: not claimed now)."""

    state: TagState
    claim_id: str | None
    claim_expires_at: float | None
    visible_at: float
    claim_count: int
    first_claimed_at: float | None
    dead_letter_due_at: float | None = None


def seen_by_tag(m: Message, delivery: Delivery | None) -> Message:
    """`m` with the tag's delivery state in place of the queue's own, so that the transitions
    that move a message from state to state serve tags unchanged; a message the tag has not
    touched is unclaimed and visible from when it was first ready."""
    if delivery is None:
        return replace(
            m,
            claim_id=None,
            claim_expires_at=None,
            visible_at=m.ready_at if m.ready_at is not None else m.enqueued_at,
            claim_count=0,
            first_claimed_at=None,
            dead_letter_due_at=None,
        )
    return replace(
        m,
        claim_id=delivery.claim_id,
        claim_expires_at=delivery.claim_expires_at,
        visible_at=delivery.visible_at,
        claim_count=delivery.claim_count,
        first_claimed_at=delivery.first_claimed_at,
        dead_letter_due_at=delivery.dead_letter_due_at,
    )
