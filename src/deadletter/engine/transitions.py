"""A message's life as pure functions from one state to the next: no store, no clock, no ids made.

Each function takes the time (and any new id) it needs, so the rules can be read and tested
without a database; the engine looks messages up, applies these, and writes the results.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from deadletter.domain import errors, routing
from deadletter.domain.model import (
    MAX_TTL,
    RESERVED_ATTRIBUTE_PREFIX,
    SOURCE_QUEUE_ATTRIBUTE,
    SOURCE_TAG_ATTRIBUTE,
    Attribute,
    Message,
    NewMessage,
    Queue,
)
from deadletter.domain.policies import DeadLetterPolicy, RetryPolicy
from deadletter.domain.provenance import ErrorDetails, Provenance, Reason
from deadletter.domain.redrive import SkipReason
from deadletter.domain.tags import DEFAULT_DONE_AT


def enqueued(
    new: NewMessage,
    *,
    message_id: str,
    queue: str,
    now: float,
    ttl: int,
    delay: int,
    eligible: bool,
    client_id: str | None,
) -> Message:
    """A message as sent, before the store gives it its sequence number."""
    return Message(
        id=message_id,
        queue=queue,
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
        ready_at=now + delay,
    )


def poisoned(m: Message, policy: DeadLetterPolicy | None) -> bool:
    """Whether `m` has been delivered as often as the queue's active policy allows, so that
    the next claim moves it to the DLQ instead of handing it out."""
    return policy is not None and policy.active and m.claim_count >= policy.max_claims


def claimed(
    m: Message,
    *,
    claim_id: str,
    now: float,
    expires: float,
    grace: int,
    retry: RetryPolicy | None = None,
) -> Message:
    """Handed to a consumer until `expires`; it lives at least `grace` seconds beyond. Should
    the claim lapse, the message is visible again after the `retry` policy's backoff for this
    delivery (`lapsed`)."""
    # Spelled out: `dataclasses.replace` costs several times more, once per message claimed.
    return Message(
        id=m.id,
        queue=m.queue,
        seq=m.seq,
        body=m.body,
        attributes=m.attributes,
        enqueued_at=m.enqueued_at,
        expires_at=max(m.expires_at, expires + grace),
        visible_at=lapsed(expires, m.claim_count + 1, retry),
        claim_id=claim_id,
        claim_expires_at=expires,
        claim_count=m.claim_count + 1,
        first_claimed_at=m.first_claimed_at or now,
        client_id=m.client_id,
        dead_letter_eligible=m.dead_letter_eligible,
        provenance=m.provenance,
        history=m.history,
        dead_letter_due_at=m.dead_letter_due_at,
        group_id=m.group_id,
        deduplication_id=m.deduplication_id,
        ready_at=m.ready_at,
        only_tag=m.only_tag,
    )


def last_delivery(m: Message, policy: DeadLetterPolicy | None) -> Message:
    """`m` just claimed, marked due for the DLQ when its claim lapses if this was the last
    delivery the policy allows (so the move need not wait for another claim)."""
    due = m.claim_expires_at if poisoned(m, policy) else None
    return m if due == m.dead_letter_due_at else replace(m, dead_letter_due_at=due)


def lapsed(expires: float, deliveries: int, retry: RetryPolicy | None) -> float:
    """When a message held until `expires` is visible again if its claim lapses then: after
    the retry policy's backoff for its `deliveries`, as if the consumer had given it back at
    that moment. Written when the claim is made, in the column claims select by
    (`visible_at`), so that a lapse needs no write and a claim's query is unchanged."""
    return expires + (0 if retry is None else retry.backoff(deliveries))


def renewed(m: Message, expires: float, grace: int, retry: RetryPolicy | None = None) -> Message:
    """Held by the same claim until `expires`, living at least `grace` seconds beyond."""
    return replace(
        m,
        claim_expires_at=expires,
        visible_at=lapsed(expires, m.claim_count, retry),
        expires_at=max(m.expires_at, expires + grace),
        dead_letter_due_at=None if m.dead_letter_due_at is None else expires,
    )


def backoff(m: Message, retry: RetryPolicy | None, delay: int | None) -> int:
    """How long `m`, given back, stays hidden: the consumer's `delay` when it gives one, else
    its group's `retry` policy's backoff after `m`'s deliveries so far."""
    if delay is not None:
        return delay
    return 0 if retry is None else retry.backoff(m.claim_count)


def unclaimed(m: Message, now: float, delay: int = 0) -> Message:
    """Given back: no claim, visible again after `delay` seconds; its delivery count stays."""
    return replace(
        m, claim_id=None, claim_expires_at=None, visible_at=now + delay, dead_letter_due_at=None
    )


def visibility_changed(
    m: Message, now: float, timeout: int, retry: RetryPolicy | None = None
) -> Message:
    """The claim moved to end `timeout` seconds from now; 0 gives the message back (its
    backoff is the caller's, `backoff`)."""
    if timeout == 0:
        return unclaimed(m, now)
    return replace(
        m,
        claim_expires_at=now + timeout,
        visible_at=lapsed(now + timeout, m.claim_count, retry),
        expires_at=max(m.expires_at, now + timeout),
        dead_letter_due_at=None if m.dead_letter_due_at is None else now + timeout,
    )


def dead_lettered(
    m: Message,
    *,
    source: Queue,
    dlq: Queue,
    reason: Reason,
    now: float,
    description: str | None = None,
    error: str | ErrorDetails | None = None,
    source_tag: str | None = None,
) -> Message:
    """`m` moved from `source` to its DLQ: visible, unclaimed, with its provenance and one more
    history event; its delivery count is kept for the record. A consumer tag's dead letter
    names the tag (`source_tag`) in its provenance and an attribute."""
    details = ErrorDetails(message=error) if isinstance(error, str) else error or ErrorDetails()
    expires = dead_letter_expiry(m, source, dlq, reason, now)
    event = {
        "event": "dead_lettered",
        "at": now,
        "queue": source.name,
        "dlq": dlq.name,
        "reason": reason.value,
        "claim_count": m.claim_count,
        "description": description,
        **({"tag": source_tag} if source_tag is not None else {}),
    }
    attributes = {**m.attributes, SOURCE_QUEUE_ATTRIBUTE: Attribute("String", source.name)}
    if source_tag is not None:
        attributes[SOURCE_TAG_ATTRIBUTE] = Attribute("String", source_tag)
    return replace(
        m,
        queue=dlq.name,
        attributes=attributes,
        ready_at=now,
        only_tag=None,
        expires_at=expires,
        visible_at=now,
        claim_id=None,
        claim_expires_at=None,
        dead_letter_due_at=None,
        provenance=Provenance(
            source_queue=source.name,
            reason=reason,
            dead_lettered_at=now,
            claim_count=m.claim_count,
            original_message_id=m.id,
            original_enqueued_at=m.enqueued_at,
            description=description,
            error=details.text,
            source_tag=source_tag,
            error_class=details.error_class,
            error_stack=details.stack,
        ),
        history=(*m.history, event),
    )


def dead_letter_expiry(m: Message, source: Queue, dlq: Queue, reason: Reason, now: float) -> float:
    """When the dead letter of `m` leaves its DLQ: a dead letter lives as long as its DLQ
    keeps messages, never only as long as its source would have kept it.

    - The policy's DLQ TTL (Zaqar's `_dead_letter_queue_messages_ttl`), where set, counts from
      the move, as the Zaqar spec says.
    - Else the DLQ's retention, its maximum message TTL (SQS's MessageRetentionPeriod; on the
      Zaqar face `_max_message_ttl`, by default the engine's longest TTL), counted from the
      message's original enqueue time as SQS counts it for a standard DLQ: the message's
      clock is kept, as the Zaqar spec keeps its "current TTL", and only its length is the
      DLQ's. Keeping the source's expiry instead dropped dead letters with the source's
      default TTL, an hour, unseen.
    - A FIFO DLQ counts from the move, as SQS resets the enqueue time of a FIFO DLQ's
      messages; so does a message dead-lettered because it expired, whose time in the source
      is spent (counted from its enqueue time it would leave the DLQ at once).

    A standard DLQ whose retention is shorter than the time a message spent in its source
    keeps it no longer than that retention, as on SQS: the sweep drops it, counted and logged
    (`expiry.sweep`)."""
    policy = source.settings.dead_letter
    if policy is not None and policy.message_ttl is not None:
        return now + policy.message_ttl
    # A DLQ that ignores TTLs (Solace's respect-ttl off) keeps messages for the longest TTL.
    retention = MAX_TTL if dlq.settings.respect_ttl is False else dlq.settings.max_ttl
    if dlq.settings.fifo or reason is Reason.EXPIRED:
        return now + retention
    return m.enqueued_at + retention


def redriven(
    m: Message, *, message_id: str, destination: Queue, dlq: str, task_id: str, now: float
) -> Message:
    """A dead letter sent back as a new message: a fresh attempt budget and TTL, the reserved
    attributes and provenance dropped, its history kept with one more event. A consumer tag's
    dead letter sent back to a queue with that tag is for that tag only: the queue's other
    consumers are done with it from the start (`redrive_tag`)."""
    only_tag = redrive_tag(m.provenance.source_tag if m.provenance else None, destination)
    event = redrive_event(destination.name, dlq, task_id, now, only_tag)
    return replace(
        m,
        id=message_id,
        queue=destination.name,
        attributes={
            k: v
            for k, v in m.attributes.items()
            if not k.upper().startswith(RESERVED_ATTRIBUTE_PREFIX)
        },
        enqueued_at=now,
        expires_at=now + destination.settings.default_ttl,
        visible_at=now if only_tag is None else DEFAULT_DONE_AT,
        ready_at=now,
        only_tag=only_tag,
        claim_id=None,
        claim_expires_at=None,
        claim_count=0,
        first_claimed_at=None,
        provenance=None,
        dead_letter_due_at=None,
        history=(*m.history, event),
    )


def redrive_event(
    queue: str, dlq: str, task_id: str, now: float, tag: str | None = None
) -> dict[str, Any]:
    """The history event of a message redriven from `dlq` to `queue` (the store adds it when
    it redrives in place, see `Transaction.redrive_messages`), for consumer tag `tag` only."""
    event = {"event": "redriven", "at": now, "dlq": dlq, "queue": queue, "task_id": task_id}
    return {**event, "tag": tag} if tag is not None else event


def redrive_tag(source_tag: str | None, destination: Queue) -> str | None:
    """The consumer tag a dead letter goes back to: the tag it died in, where the destination
    has that tag; else None (every consumer of the destination)."""
    if source_tag is not None and source_tag in destination.settings.consumer_tags:
        return source_tag
    return None


def expiry_dead_letters(
    queue: Queue | None, messages: list[Message]
) -> tuple[list[Message], list[Message], list[Message]]:
    """Expired messages of `queue` split into those its policy dead-letters, those the policy
    would dead-letter but that are not eligible, and those no policy asks for."""
    policy = routing.policy_for(queue.settings, None, Reason.EXPIRED) if queue else None
    if policy is None or not policy.active or not policy.on_expiry:
        return [], [], list(messages)
    eligible, not_eligible = split_eligible(messages)
    return eligible, not_eligible, []


def split_eligible(messages: list[Message]) -> tuple[list[Message], list[Message]]:
    """Messages past their limit split into those that go to the DLQ and those dropped: a
    producer may mark a message not eligible for the DLQ (Solace's DMQ-eligible flag)."""
    return (
        [m for m in messages if m.dead_letter_eligible],
        [m for m in messages if not m.dead_letter_eligible],
    )


def redrive_skip_of(
    name: str, source: Queue | None, dead_letter_targets: set[str]
) -> SkipReason | None:
    """Why a redrive leaves the dead letters of source queue `name` in the DLQ (`source` is
    that queue as it is now, None if deleted), or None when they can go back."""
    if source is None:
        return SkipReason.SOURCE_DELETED
    if name in dead_letter_targets:
        return SkipReason.SOURCE_IS_DLQ
    return None


def may_delete(
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
