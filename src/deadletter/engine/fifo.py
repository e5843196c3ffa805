"""FIFO queues: which messages a claim may take, which sends are duplicates, and the settings
and dead-letter rules that go with them.

Order is kept within a message group. A claim takes the oldest visible messages of groups
with nothing in flight, several of one group in order if it may; the group then waits until
every one of them is deleted or visible again. Two claimants never serve one group at once:
each locks the groups it serves (skipping those another holds) and reads them again under
the lock, so what it takes is what the committed state allows.

A send names a deduplication id (or the queue derives one from the body's SHA-256); a
second send of the id within `DEDUPLICATION_INTERVAL` is accepted but not enqueued, and
answered with the first message's id and sequence number.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace

from deadletter.domain import errors
from deadletter.domain.model import (
    DEDUPLICATION_INTERVAL,
    DEDUPLICATION_SCOPES,
    MAX_FIFO_ID,
    THROUGHPUT_LIMITS,
    Message,
    NewMessage,
    Queue,
    QueueSettings,
)
from deadletter.storage.base import Transaction

# SQS shows sequence numbers of 20 digits; the store's per-queue sequence numbers, offset by
# this, keep their order as numbers and as strings.
SEQUENCE_BASE = 10**19
# A claim looks this far beyond its limit for groups, in case those in front are held by
# another claimant.
LOOKAHEAD = 100


def sequence_number(m: Message) -> str:
    return str(SEQUENCE_BASE + m.seq)


def check_id(what: str, value: str) -> None:
    """Group and deduplication ids: 1-128 printable ASCII characters without spaces."""
    if not 1 <= len(value) <= MAX_FIFO_ID or not all("!" <= c <= "~" for c in value):
        raise errors.InvalidInput(
            f"{what} must be 1 to {MAX_FIFO_ID} letters, digits or punctuation characters"
        )


def check_settings(s: QueueSettings, current: Queue | None) -> None:
    """The FIFO settings of a queue being created (`current` None) or changed."""
    if current is not None and current.settings.fifo != s.fifo:
        raise errors.InvalidInput("a queue cannot change between FIFO and standard")
    if s.deduplication_scope not in DEDUPLICATION_SCOPES:
        raise errors.InvalidInput(
            f"deduplication scope must be one of {', '.join(DEDUPLICATION_SCOPES)}"
        )
    if s.throughput_limit not in THROUGHPUT_LIMITS:
        raise errors.InvalidInput(f"throughput limit must be one of {', '.join(THROUGHPUT_LIMITS)}")
    if not s.fifo:
        if (s.content_based_deduplication, s.deduplication_scope, s.throughput_limit) != (
            False,
            "queue",
            "perQueue",
        ):
            raise errors.InvalidInput(
                "content-based deduplication, deduplication scope and throughput limit are"
                " settings of FIFO queues"
            )
        return
    if s.throughput_limit == "perMessageGroupId" and s.deduplication_scope != "messageGroup":
        raise errors.InvalidInput(
            "a throughput limit per message group (high throughput) needs deduplication"
            " per message group"
        )


def check_dead_letter_type(source: str, s: QueueSettings, dlq: Queue) -> None:
    """A FIFO queue's DLQ is FIFO and a standard queue's is standard, as on SQS: a FIFO DLQ
    keeps each group's order, and a standard one would lose it."""
    if dlq.settings.fifo != s.fifo:
        kind = "FIFO" if s.fifo else "standard"
        raise errors.DeadLetterPolicyError(
            f"the dead-letter queue of {kind} queue {source!r} must be a {kind} queue too"
        )


def check_destination(dlq: Queue, destination: Queue) -> None:
    """A redrive moves messages between queues of one type."""
    if dlq.settings.fifo != destination.settings.fifo:
        raise errors.InvalidInput(
            "a redrive moves messages between two FIFO queues or two standard queues"
        )


def enqueued(new: NewMessage, m: Message, s: QueueSettings) -> Message:
    """`m` as sent to a queue with settings `s`: with its group and deduplication ids, once
    they are checked against the queue's type."""
    if new.group_id is not None:
        check_id("message group id", new.group_id)
    if new.deduplication_id is not None:
        check_id("message deduplication id", new.deduplication_id)
    if not s.fifo:
        if new.deduplication_id is not None:
            raise errors.InvalidInput("only FIFO queues take a message deduplication id")
        return m if new.group_id is None else replace(m, group_id=new.group_id)
    if new.group_id is None:
        raise errors.InvalidInput("a message sent to a FIFO queue needs a message group id")
    if new.delay:
        raise errors.InvalidInput(
            "messages of a FIFO queue cannot have a delay of their own; set the queue's"
        )
    dedup_id = new.deduplication_id
    if dedup_id is None:
        if not s.content_based_deduplication:
            raise errors.InvalidInput(
                "a FIFO queue without content-based deduplication needs a message deduplication id"
            )
        dedup_id = hashlib.sha256(new.body).hexdigest()
    return replace(m, group_id=new.group_id, deduplication_id=dedup_id)


def stored(
    tx: Transaction, project: str, s: QueueSettings, built: list[Message], now: float
) -> tuple[list[Message], list[Message]]:
    """Insert `built` (messages of one queue); per message, the stored one or, for a
    duplicate, the message as sent with the id and sequence number of the one it repeats;
    and the messages that were enqueued (duplicates left out)."""
    if not s.fifo:
        inserted = tx.insert_messages(project, built)
        return inserted, inserted
    queue = built[0].queue
    tx.forget_deduplications(project, queue, now)
    keys = [_dedup_key(m, s) for m in built]
    first: dict[tuple[str, str], int] = {}
    fresh = [i for i, key in enumerate(keys) if first.setdefault(key, i) == i]
    winners = dict(zip(fresh, tx.insert_messages(project, [built[i] for i in fresh]), strict=True))
    repeated = []
    duplicates: set[int] = set()
    # In key order, so that two batches never wait for each other's records in turn.
    for i in sorted(fresh, key=lambda i: keys[i]):
        scope, dedup_id = keys[i]
        until = now + DEDUPLICATION_INTERVAL
        original = tx.remember_deduplication(
            project, queue, scope=scope, dedup_id=dedup_id, message=winners[i], until=until, now=now
        )
        if original is not None:
            repeated.append(winners[i].id)
            winners[i] = replace(winners[i], id=original[0], seq=original[1])
            duplicates.add(i)
    if repeated:
        tx.delete_messages(project, queue, repeated)
    # A sender makes the rows of its groups, so that a claim seldom has to: a claim making
    # one would wait for this send to commit, and another claim for that claim.
    tx.add_fifo_groups(project, queue, [m.group_id for m in built if m.group_id is not None])
    out = [
        winners[i] if first[key] == i else _as(built[i], winners[first[key]])
        for i, key in enumerate(keys)
    ]
    enqueued = [winners[i] for i in fresh if i not in duplicates]
    return out, enqueued


def _dedup_key(m: Message, s: QueueSettings) -> tuple[str, str]:
    assert m.group_id is not None and m.deduplication_id is not None, "see enqueued"
    scope = m.group_id if s.deduplication_scope == "messageGroup" else ""
    return scope, m.deduplication_id


def _as(sent: Message, original: Message) -> Message:
    return replace(sent, id=original.id, seq=original.seq)


def claimable(tx: Transaction, queue: Queue, now: float, limit: int) -> list[Message]:
    """What a claim of up to `limit` messages may take from `queue`, oldest first, locked."""
    project, name = queue.project, queue.name
    if not queue.settings.fifo:
        return tx.claimable(project, name, now, limit)
    candidates = tx.fifo_candidates(project, name, now, limit + LOOKAHEAD)
    per_group = Counter(m.group_id for m in candidates if m.group_id is not None)
    waiting = list(per_group)  # in order of each group's oldest message
    held: list[str] = []
    covered = 0
    while waiting and covered < limit:
        batch: list[str] = []
        while waiting and covered + sum(per_group[g] for g in batch) < limit:
            batch.append(waiting.pop(0))
        locked = tx.lock_fifo_groups(project, name, batch)
        held += locked
        covered += sum(per_group[g] for g in locked)
    if not held:
        return []
    return tx.fifo_candidates(project, name, now, limit, held)
