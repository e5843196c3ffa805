"""Reads inside a transaction that turn a missing queue, message or claim into a domain error."""

from __future__ import annotations

from deadletter.domain import errors
from deadletter.domain.model import Message, Queue
from deadletter.storage.base import ClaimRecord, Transaction


def require_queue(tx: Transaction, project: str, name: str, lock: bool = False) -> Queue:
    queue = tx.get_queue(project, name, lock=lock)
    if queue is None:
        raise errors.QueueNotFound(f"queue {name!r} does not exist")
    return queue


def held_message(
    tx: Transaction, project: str, queue: str, message_id: str, claim_id: str, now: float
) -> Message:
    """An unexpired message of `queue` that `claim_id` holds right now."""
    require_queue(tx, project, queue)
    found = [m for m in tx.get_messages(project, queue, [message_id]) if m.expires_at > now]
    return held_by(found, message_id, claim_id, now)


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


def live_claim(tx: Transaction, project: str, queue: str, claim_id: str, now: float) -> ClaimRecord:
    record = tx.get_claim(project, queue, claim_id)
    if record is None or record.expires_at <= now:
        raise errors.ClaimNotFound(f"claim {claim_id!r} does not exist or has expired")
    return record


def live_messages(
    tx: Transaction, project: str, queue: str, claim_id: str, now: float
) -> list[Message]:
    """The messages `claim_id` still holds: those claimed since by another are left out."""
    return [m for m in tx.claimed_by(project, queue, claim_id) if m.is_claimed(now)]
