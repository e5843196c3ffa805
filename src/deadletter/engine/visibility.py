"""Changing how long held messages stay hidden, a whole batch in one transaction, each change
succeeding or failing on its own (SQS's ChangeMessageVisibilityBatch)."""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.domain import errors
from deadletter.domain.model import MAX_CLAIM_TTL, Message, Queue
from deadletter.engine import claims, tag_claims, transitions, validation
from deadletter.engine.lookups import held_by, held_rows
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction

# (message id, claim id, timeout in seconds, consumer tag or None for the untagged consumers)
VisibilityChange = tuple[str, str, int, str | None]


class _Batch:
    """The untagged messages of a batch as they are now in this transaction: read (and
    locked) together, oldest first, so that two batches never wait for each other's rows in
    turn. A change whose message stays held is written with the others at the end; any other
    write waits for those first, and the message it changed is read anew by a later entry."""

    def __init__(self, tx: Transaction, queue: Queue, ids: Sequence[str], now: float) -> None:
        self.tx, self.queue, self.now = tx, queue, now
        self.found: dict[str, Message | None] = dict.fromkeys(ids)
        if ids:
            self.found.update((m.id, m) for m in held_rows(tx, queue.project, queue.name, ids, now))
        self.changed: dict[str, Message] = {}

    def held(self, message_id: str, claim_id: str) -> Message:
        if message_id not in self.found:  # written since: read as it is now
            self.flush()
            rows = held_rows(self.tx, self.queue.project, self.queue.name, [message_id], self.now)
            self.found[message_id] = rows[0] if rows else None
        message = self.found[message_id]
        return held_by([message] if message else [], message_id, claim_id, self.now)

    def hold(self, message: Message) -> None:
        self.found[message.id] = self.changed[message.id] = message

    def written(self, message_id: str) -> None:
        self.found.pop(message_id, None)

    def flush(self) -> None:
        if self.changed:
            self.tx.update_messages(self.queue.project, list(self.changed.values()))
            self.changed.clear()


def change(
    tx: Transaction,
    pending: Pending,
    queue: Queue,
    changes: Sequence[VisibilityChange],
    now: float,
) -> list[Message | errors.DeadletterError]:
    """Apply `changes` in order, each as it would apply alone: the message as it is then, or
    why the change was refused (a timeout out of range, a claim that no longer holds the
    message, a message gone). A refused change writes nothing; a timeout of 0 gives the
    message back (at its delivery limit it goes to the DLQ at once)."""
    batch = _Batch(tx, queue, [mid for mid, _, _, tag in changes if tag is None], now)
    _lock_tag_states(tx, queue, changes)
    results: list[Message | errors.DeadletterError] = []
    for message_id, claim_id, timeout, tag in changes:
        try:  # everything that may refuse the change comes before its first write
            validation.check_range("visibility timeout", timeout, 0, MAX_CLAIM_TTL)
            if tag is None:
                held = batch.held(message_id, claim_id)
            else:
                held = tag_claims.held_message(tx, queue, tag, message_id, claim_id, now)
        except errors.DeadletterError as exc:
            results.append(exc)
            continue
        if tag is None and timeout > 0:
            changed = transitions.visibility_changed(held, now, timeout)
            batch.hold(changed)
            results.append(changed)
            continue
        batch.flush()
        batch.written(message_id)
        if tag is None:
            results.append((claims.given_back(tx, pending, queue, [held], now) or [held])[0])
        elif timeout == 0:
            results.append(tag_claims.given_back(tx, pending, queue, tag, [held], now)[0])
        else:
            results.append(tag_claims.visibility_changed(tx, queue, tag, held, now, timeout))
    batch.flush()
    return results


def _lock_tag_states(tx: Transaction, queue: Queue, changes: Sequence[VisibilityChange]) -> None:
    """Lock each tag's states of the batch's messages together, oldest first, as `_Batch`
    locks the untagged ones; each change then reads its own again, already held."""
    by_tag: dict[str, list[str]] = {}
    for message_id, _, _, tag in changes:
        if tag is not None:
            by_tag.setdefault(tag, []).append(message_id)
    for tag, ids in sorted(by_tag.items()):
        tx.tag_messages(queue.project, queue.name, tag, ids, lock=True)
