"""Bounded queues (RabbitMQ's x-max-length, x-max-length-bytes and x-overflow): which of a send's
messages a queue at its bound takes, and the oldest messages drop-head pushes out.

A bound counts every unexpired message in the queue, visible, delayed or claimed (RabbitMQ
counts its ready messages only): a claimed message is still stored here, and comes back when
its claim lapses, so a bound that left it out would not bound what the store holds. Its bytes
are the bodies' bytes as the store keeps them. The sender holds the queue's row (see
`Engine.send_prepared`), so the count it reads stays true until it commits: senders to one
bounded queue take turns, and the bound holds exactly however many race.
"""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.domain import errors
from deadletter.domain.model import Message, Overflow, Queue, QueueSettings, Reason
from deadletter.engine import counters, dead_letters, transitions
from deadletter.engine.groups import DefaultGroup
from deadletter.engine.lookups import require_queue
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction

# Messages drop-head reads at a time while it looks for enough bytes to push out.
HEAD_PAGE = 64


def admit(
    tx: Transaction, queue: Queue, built: Sequence[Message], now: float, each: bool
) -> tuple[list[int], errors.QueueFull | None]:
    """The positions of `built` that the queue takes, and why it refuses the others. Only
    the reject policies refuse: all of a send or none of it, or with `each` (an SQS batch's
    entries) each message in turn that still fits after those before it."""
    s = queue.settings
    every = list(range(len(built)))
    if not s.bounded or s.overflow is Overflow.DROP_HEAD:
        return every, None
    count, size = tx.size(queue.project, queue.name, now, s.max_bytes is not None)
    if not each:
        total = sum(len(m.body) for m in built)
        if _fits(s, count + len(built), size + total):
            return every, None
        return [], _full(queue, count, size)
    taken = []
    for i, m in enumerate(built):
        if _fits(s, count + 1, size + len(m.body)):
            count, size = count + 1, size + len(m.body)
            taken.append(i)
    return taken, None if len(taken) == len(built) else _full(queue, count, size)


def _fits(s: QueueSettings, count: int, size: int) -> bool:
    return (s.max_messages is None or count <= s.max_messages) and (
        s.max_bytes is None or size <= s.max_bytes
    )


def _full(queue: Queue, count: int, size: int) -> errors.QueueFull:
    s = queue.settings
    bounds = []
    if s.max_messages is not None:
        bounds.append(f"{count} of at most {s.max_messages} messages")
    if s.max_bytes is not None:
        bounds.append(f"{size} of at most {s.max_bytes} bytes")
    return errors.QueueFull(
        f"queue {queue.name!r} is full ({' and '.join(bounds)}; overflow {s.overflow.value}):"
        " the message was not sent"
    )


def refused(
    tx: Transaction, pending: Pending, queue: Queue, messages: Sequence[Message], now: float
) -> int:
    """reject-publish-dlx: refused messages go to the DLQ with reason `maxlen` where the queue
    has an active policy and they are eligible (the others are only refused: their sender
    was told); how many."""
    s = queue.settings
    policy = s.dead_letter
    if s.overflow is not Overflow.REJECT_PUBLISH_DLX or policy is None or not policy.active:
        return 0
    eligible, _ = transitions.split_eligible(list(messages))
    if not eligible:
        return 0
    dlq = require_queue(tx, queue.project, policy.target)
    dead = [transitions.dead_lettered(m, queue, dlq, Reason.MAXLEN, now) for m in eligible]
    stored = tx.insert_messages(queue.project, dead)
    tx.bump_counter(queue.project, queue.name, counters.dead_lettered(Reason.MAXLEN), len(stored))
    dead_letters.announce(pending, queue.project, queue.name, dlq.name, Reason.MAXLEN, len(stored))
    return len(stored)


def drop_head(tx: Transaction, pending: Pending, queue: Queue, now: float) -> int:
    """After a send to a drop-head queue past a bound: its oldest messages leave it until it
    is within its bounds, to the DLQ with reason `maxlen` where it has an active policy (those
    not eligible dropped and counted), else dropped and counted, never silently. They leave
    for every consumer group, as an expired message does; how many."""
    s = queue.settings
    if not s.bounded or s.overflow is not Overflow.DROP_HEAD:
        return 0
    count, size = tx.size(queue.project, queue.name, now, s.max_bytes is not None)
    extra = 0 if s.max_messages is None else count - s.max_messages
    extra_bytes = 0 if s.max_bytes is None else size - s.max_bytes
    doomed: list[Message] = []
    after = 0
    while extra > 0 or extra_bytes > 0:
        limit = max(extra, HEAD_PAGE)
        page = tx.oldest(queue.project, queue.name, now, after, limit)
        for m in page:
            if extra <= 0 and extra_bytes <= 0:
                break
            doomed.append(m)
            extra, extra_bytes = extra - 1, extra_bytes - len(m.body)
        if len(page) < limit:
            break
        after = page[-1].seq
    if not doomed:
        return 0
    group = DefaultGroup(queue)
    policy = s.dead_letter
    if policy is not None and policy.active:
        dead_letters.past_limit(tx, pending, group, doomed, Reason.MAXLEN, now)
    else:
        group.drop(tx, pending, doomed, Reason.MAXLEN)
    if s.consumer_tags:
        tx.forget_tag_states([m.id for m in doomed])
    return len(doomed)
