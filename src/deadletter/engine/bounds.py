"""Bounded queues (RabbitMQ's x-max-length, x-max-length-bytes and x-overflow): which of a send's
messages a queue at its bound takes, and the oldest messages drop-head pushes out.

A bound counts every unexpired message in the queue, visible, delayed or claimed (RabbitMQ
counts its ready messages only): a claimed message is still stored here, and comes back when
its claim lapses, so a bound that left it out would not bound what the store holds. Its bytes
are the bodies' bytes as the store keeps them. The sender holds the queue's row (see
`Engine.send_prepared`), so the count it reads stays true until it commits: senders to one
bounded queue take turns, and the bound holds exactly however many race.

Dead letters arriving in a bounded DLQ are held to its bound the same way, under the same lock
(`dead_letters`): drop-head pushes the DLQ's oldest out (dropped and counted: a DLQ has no DLQ
of its own), and the reject policies refuse the arrivals, which stay in their source queue.
"""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.domain import errors
from deadletter.domain.model import Message, Overflow, Queue, QueueSettings
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


def room(tx: Transaction, queue: Queue, messages: Sequence[Message], now: float) -> int:
    """How many of `messages`, in order, fit in the queue as it is, whatever its overflow
    policy: the first that does not fit and those after it stay out, so what arrives keeps
    its order (a FIFO queue's groups too). What a dead-lettering or a redrive may move there
    without pushing anything out."""
    s = queue.settings
    if not s.bounded:
        return len(messages)
    count, size = tx.size(queue.project, queue.name, now, s.max_bytes is not None)
    for i, m in enumerate(messages):
        count, size = count + 1, size + len(m.body)
        if not _fits(s, count, size):
            return i
    return len(messages)


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


def past_bound(tx: Transaction, queue: Queue, now: float) -> list[Message]:
    """A drop-head queue's oldest messages that must leave it for it to be within its bounds
    (none for another queue)."""
    s = queue.settings
    if not s.bounded or s.overflow is not Overflow.DROP_HEAD:
        return []
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
    return doomed
