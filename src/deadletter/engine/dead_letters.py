"""Dead-lettering: a consumer group's messages to its queue's DLQ, for whatever reason."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from deadletter.domain import errors, routing
from deadletter.domain.model import Message, Overflow, Queue
from deadletter.domain.provenance import ErrorDetails, Reason
from deadletter.engine import bounds, counters, transitions
from deadletter.engine.groups import ConsumerGroup, DefaultGroup
from deadletter.engine.lookups import each_held, require_queue
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction


class Moved(NamedTuple):
    """What a move to the DLQ did: the dead letters as stored, and the messages a bounded
    DLQ refused (overflow reject-publish[-dlx]), which stay in the source queue for the
    caller to keep, never lost."""

    stored: list[Message]
    kept: list[Message]


def move(
    tx: Transaction,
    pending: Pending,
    group: ConsumerGroup,
    *,
    messages: Sequence[Message],
    reason: Reason,
    now: float,
    description: str | None = None,
    error: ErrorDetails | None = None,
) -> Moved:
    """Move messages from `group`'s queue to its DLQ: visible, unclaimed, with their
    provenance (naming the group if it is a tag), in the order of their deaths as given (a
    sweep gives them by expiry), except that a FIFO queue's move in the order they had there,
    so its DLQ keeps each group's order. The caller has checked that the queue has an active
    policy. Where other groups still need a message, its dead letter is a copy
    (`ConsumerGroup.to_dead_letter_queue`).

    A bounded DLQ holds the arrivals to its bound as it holds sends (`engine.bounds`): under
    drop-head its oldest dead letters are pushed out, dropped and counted (reason `maxlen`);
    under reject-publish[-dlx] those that do not fit are refused, counted on the source queue
    as `dlq_full`, and returned as kept, untouched."""
    source = group.queue
    policy = group.policy(reason)
    assert policy is not None and policy.active, "callers check the policy"
    dlq = arrival_queue(tx, source.project, policy.target)
    ordered = sorted(messages, key=lambda m: m.seq) if source.settings.fifo else messages
    dead = [
        transitions.dead_lettered(
            m,
            source=source,
            dlq=dlq,
            reason=reason,
            now=now,
            description=description,
            error=error,
            source_tag=group.tag,
        )
        for m in ordered
    ]
    fits = _room(tx, dlq, dead, now)
    kept = list(ordered[fits:])
    ordered, dead = ordered[:fits], dead[:fits]
    if kept:
        refused_by_dlq(tx, source, reason, len(kept))
    stored = group.to_dead_letter_queue(tx, pending, ordered, dead, reason) if dead else []
    if stored:
        announce(
            pending,
            source.project,
            source=source.name,
            dlq=dlq.name,
            reason=reason,
            count=len(stored),
        )
        push_out(tx, pending, dlq, now)
    return Moved(stored, kept)


def arrival_queue(tx: Transaction, project: str, name: str) -> Queue:
    """The DLQ `name`, its row locked when it is bounded: arrivals and sends to a bounded
    queue take turns, so the count each reads stays true until it commits."""
    dlq = require_queue(tx, project, name)
    if dlq.settings.bounded:
        dlq = require_queue(tx, project, name, lock=True)
    return dlq


def _room(tx: Transaction, dlq: Queue, dead: Sequence[Message], now: float) -> int:
    """How many of `dead`, in order, a DLQ takes: all under drop-head (it pushes its oldest
    out after), as many as fit under the reject policies."""
    if dlq.settings.overflow is Overflow.DROP_HEAD:
        return len(dead)
    return bounds.room(tx, dlq, dead, now)


def refused_by_dlq(tx: Transaction, source: Queue, reason: Reason, count: int) -> None:
    tx.bump_counter(source.project, source.name, counters.dlq_full(reason), count)


def push_out(tx: Transaction, pending: Pending, dlq: Queue, now: float) -> None:
    """A drop-head DLQ past its bound drops its oldest dead letters and counts them (reason
    `maxlen`): a DLQ has no DLQ of its own."""
    doomed = bounds.past_bound(tx, dlq, now)
    if doomed:
        DefaultGroup(dlq).drop(tx, pending, doomed, Reason.MAXLEN)
        if dlq.settings.consumer_tags:
            tx.forget_tag_states([m.id for m in doomed])


def announce(
    pending: Pending, project: str, *, source: str, dlq: str, reason: Reason, count: int
) -> None:
    """Once committed, `count` new dead letters in `dlq` wake its consumers and are told to
    the listeners."""
    pending.available.add((project, dlq))
    pending.calls.append(lambda lst: lst.dead_lettered(project, source, dlq, reason.value, count))


def past_limit(
    tx: Transaction,
    pending: Pending,
    group: ConsumerGroup,
    *,
    messages: Sequence[Message],
    reason: Reason,
    now: float,
) -> Moved:
    """Messages `group` delivered past the limit of `reason` leave it: the eligible ones to
    the DLQ (returned as moved, or as kept where a bounded DLQ refused them), the others
    dropped and counted, never silently. The caller has checked that the queue has an active
    policy."""
    eligible, not_eligible = transitions.split_eligible(list(messages))
    if not_eligible:
        group.drop(tx, pending, not_eligible, reason)
    if not eligible:
        return Moved([], [])
    return move(tx, pending, group, messages=eligible, reason=reason, now=now)


def refused_send(
    tx: Transaction, pending: Pending, queue: Queue, messages: Sequence[Message], now: float
) -> int:
    """reject-publish-dlx: refused messages go to the DLQ with reason `maxlen` where the queue
    has an active policy and they are eligible (the others are only refused: their sender
    was told), as far as a bounded DLQ takes them (those it refuses are counted as
    `dlq_full`; their sender was told too); how many."""
    s = queue.settings
    policy = routing.policy_for(s, None, Reason.MAXLEN)
    if s.overflow is not Overflow.REJECT_PUBLISH_DLX or policy is None or not policy.active:
        return 0
    eligible, _ = transitions.split_eligible(list(messages))
    if not eligible:
        return 0
    dlq = arrival_queue(tx, queue.project, policy.target)
    dead = [
        transitions.dead_lettered(m, source=queue, dlq=dlq, reason=Reason.MAXLEN, now=now)
        for m in eligible
    ]
    fits = _room(tx, dlq, dead, now)
    if fits < len(dead):
        refused_by_dlq(tx, queue, Reason.MAXLEN, len(dead) - fits)
    if not fits:
        return 0
    stored = tx.insert_messages(queue.project, dead[:fits])
    tx.bump_counter(queue.project, queue.name, counters.dead_lettered(Reason.MAXLEN), len(stored))
    announce(
        pending,
        queue.project,
        source=queue.name,
        dlq=dlq.name,
        reason=Reason.MAXLEN,
        count=len(stored),
    )
    push_out(tx, pending, dlq, now)
    return len(stored)


def drop_head(
    tx: Transaction, pending: Pending, queue: Queue, now: float, refuse: bool = True
) -> int:
    """After a send to a drop-head queue past a bound (or a bound lowered): its oldest
    messages leave it until it is within its bounds, to the DLQ with reason `maxlen` where it
    has an active policy (those not eligible dropped and counted), else dropped and counted,
    never silently. They leave for every consumer group, as an expired message does; how
    many. A bounded DLQ that refuses them refuses the send: the queue cannot make room
    without losing them. Without `refuse` (a bound lowered) they stay, and the queue is over
    its bound until the DLQ has room."""
    doomed = bounds.past_bound(tx, queue, now)
    if not doomed:
        return 0
    group = DefaultGroup(queue)
    policy = group.policy(Reason.MAXLEN)
    if policy is not None and policy.active:
        kept = past_limit(tx, pending, group, messages=doomed, reason=Reason.MAXLEN, now=now).kept
        if kept and refuse:
            raise errors.DeadLetterQueueFull(
                f"queue {queue.name!r} is full and its dead-letter queue {policy.target!r}"
                " refuses the oldest messages it would push out: the message was not sent"
            )
        kept_ids = {m.id for m in kept}
        doomed = [m for m in doomed if m.id not in kept_ids]
    else:
        group.drop(tx, pending, doomed, Reason.MAXLEN)
    if queue.settings.consumer_tags:
        tx.forget_tag_states([m.id for m in doomed])
    return len(doomed)


def reject(
    tx: Transaction,
    pending: Pending,
    group: ConsumerGroup,
    *,
    held: Sequence[tuple[str, str]],
    now: float,
    description: str | None,
    error: ErrorDetails | None,
) -> list[Message]:
    """A consumer holding the claims moves messages to the DLQ (reason `rejected`); all the
    pairs must be held, or nothing moves."""
    queue = group.queue
    policy = group.policy(Reason.REJECTED)
    if queue.name in tx.dead_letter_targets(queue.project):
        raise errors.NoActiveDeadLetterPolicy(
            f"{queue.name!r} is a dead-letter queue; its messages cannot be dead-lettered"
        )
    if policy is None or not policy.active:
        raise errors.NoActiveDeadLetterPolicy(
            f"queue {queue.name!r} has no active dead-letter policy"
        )
    # A pair listed twice is one message: moved, and counted, once.
    pairs = dict.fromkeys(held)
    found = group.held(tx, [mid for mid, _ in pairs], now)
    messages = each_held(found, pairs, now)
    moved = move(
        tx,
        pending,
        group,
        messages=messages,
        reason=Reason.REJECTED,
        now=now,
        description=description,
        error=error,
    )
    if moved.kept:
        raise _dlq_full(queue, policy.target)
    return moved.stored


def not_requeued(
    tx: Transaction, pending: Pending, group: ConsumerGroup, message: Message, now: float
) -> list[Message]:
    """A held message its consumer gives back not to be delivered again (RabbitMQ's nack with
    requeue=false): to the DLQ at once with reason `rejected` where the queue has an active
    policy (dropped and counted if it is not eligible), else dropped and counted, as RabbitMQ
    drops it without a dead-letter exchange; the dead letter, if there is one."""
    policy = group.policy(Reason.REJECTED)
    if policy is not None and policy.active:
        moved = past_limit(tx, pending, group, messages=[message], reason=Reason.REJECTED, now=now)
        if moved.kept:
            raise _dlq_full(group.queue, policy.target)
        return moved.stored
    group.drop(tx, pending, [message], Reason.REJECTED)
    return []


def _dlq_full(queue: Queue, target: str) -> errors.DeadLetterQueueFull:
    """A consumer's dead-lettering that a bounded DLQ refuses is refused as a whole: the
    consumer still holds the messages, and is told."""
    return errors.DeadLetterQueueFull(
        f"dead-letter queue {target!r} of {queue.name!r} is full: the messages were not"
        " dead-lettered and are still held"
    )
