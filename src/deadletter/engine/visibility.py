"""Changing how long held messages stay hidden, a whole batch in one transaction, each change
succeeding or failing on its own (SQS's ChangeMessageVisibilityBatch)."""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.domain import errors
from deadletter.domain.model import Message, Queue
from deadletter.engine import claims, groups, transitions, validation
from deadletter.engine.groups import ConsumerGroup
from deadletter.engine.lookups import held_by
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction

# (message id, claim id, timeout in seconds, consumer tag or None for the untagged consumers)
VisibilityChange = tuple[str, str, int, str | None]


class _Batch:
    """One group's messages of a batch as they are now in this transaction: read (and their
    deliveries locked) together, oldest first, so that two batches never wait for each
    other's rows in turn. A change whose message stays held is written with the others at the
    end; any other write waits for those first, and the message it changed is read anew by a
    later entry."""

    def __init__(self, tx: Transaction, group: ConsumerGroup, ids: Sequence[str], now: float):
        self.tx, self.group, self.now = tx, group, now
        self.found: dict[str, Message | None] = dict.fromkeys(ids)
        self.found.update((m.id, m) for m in group.held(tx, ids, now))
        self.changed: dict[str, Message] = {}

    def held(self, message_id: str, claim_id: str) -> Message:
        if message_id not in self.found:  # written since: read as it is now
            self.flush()
            rows = self.group.held(self.tx, [message_id], self.now)
            self.found[message_id] = rows[0] if rows else None
        message = self.found[message_id]
        return held_by([message] if message else [], message_id, claim_id, self.now)

    def hold(self, message: Message) -> None:
        self.found[message.id] = self.changed[message.id] = message

    def written(self, message_id: str) -> None:
        self.found.pop(message_id, None)

    def flush(self) -> None:
        if self.changed:
            self.group.hold(self.tx, list(self.changed.values()))
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
    by_group: dict[str | None, list[str]] = {}
    for message_id, _, _, tag in changes:
        by_group.setdefault(tag, []).append(message_id)
    # The default group's messages first, then each tag's, by name: one order for everyone.
    order = sorted(by_group, key=lambda tag: (tag is not None, tag or ""))
    batches = {tag: _Batch(tx, groups.named(queue, tag), by_group[tag], now) for tag in order}
    results: list[Message | errors.DeadletterError] = []
    for message_id, claim_id, timeout, tag in changes:
        batch = batches[tag]
        try:  # everything that may refuse the change comes before its first write
            validation.check_claim_ttl("visibility timeout", timeout)
            held = batch.held(message_id, claim_id)
        except errors.DeadletterError as exc:
            results.append(exc)
            continue
        if timeout > 0:
            changed = transitions.visibility_changed(held, now, timeout, batch.group.retry())
            batch.hold(changed)
            results.append(changed)
            continue
        for each in batches.values():
            each.flush()
        batch.written(message_id)
        results.append(
            (claims.given_back(tx, pending, batch.group, messages=[held], now=now) or [held])[0]
        )
    for each in batches.values():
        each.flush()
    return results
