"""Reads inside a transaction that turn a missing queue, message or claim into a domain error."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from deadletter.domain import errors
from deadletter.domain.model import Message, Queue
from deadletter.storage.base import ClaimRecord, Transaction


def require_queue(tx: Transaction, project: str, name: str, lock: bool = False) -> Queue:
    queue = tx.get_queue(project, name, lock=lock)
    if queue is None:
        raise errors.QueueNotFound(f"queue {name!r} does not exist")
    return queue


def held_rows(
    tx: Transaction, project: str, queue: str, ids: Sequence[str], now: float
) -> list[Message]:
    """The unexpired messages of `queue` among `ids`, locked for a write that starts from
    them, oldest first (the order every locking read takes them in)."""
    return [m for m in tx.get_messages(project, queue, ids, lock=True) if m.expires_at > now]


def each_held(
    found: Sequence[Message], pairs: Iterable[tuple[str, str]], now: float
) -> list[Message]:
    """`held_by` of each (message id, claim id) pair, among `found`: the messages of all the
    pairs, read and locked together, oldest first. Read one pair at a time, in the order
    given, two writes on the same messages could each hold one that the other waits for."""
    by_id = {m.id: m for m in found}
    return [held_by([by_id[m]] if m in by_id else [], m, c, now) for m, c in pairs]


def held_by(found: list[Message], message_id: str, claim_id: str, now: float) -> Message:
    """The message found (none, or one), if `claim_id` is its live claim."""
    if not found:
        raise errors.MessageNotFound(f"message {message_id!r} does not exist")
    message = found[0]
    if message.claim_id != claim_id or not message.is_claimed(now):
        raise errors.ClaimMismatch(
            f"claim {claim_id!r} is not the live claim of message {message_id!r}"
        )
    return message


def live_claim(
    tx: Transaction, project: str, queue: str, *, claim_id: str, now: float, lock: bool = False
) -> ClaimRecord:
    """With `lock`, for a write: its row stays locked, and so a renewal and a release of one
    claim take turns."""
    record = tx.get_claim(project, queue, claim_id, lock=lock)
    if record is None or record.expires_at <= now:
        raise errors.ClaimNotFound(f"claim {claim_id!r} does not exist or has expired")
    return record


def live_messages(
    tx: Transaction, project: str, queue: str, *, claim_id: str, now: float, lock: bool = False
) -> list[Message]:
    """The messages `claim_id` still holds: those claimed since by another are left out.
    With `lock`, for a write: their rows stay locked until it commits."""
    found = tx.claimed_by(project, queue, claim_id, lock=lock)
    return [m for m in found if m.is_claimed(now)]
