"""Acknowledgements inside a transaction: consumers done with messages they hold (or that
nobody holds), by the rules of `Engine.delete_message`; a consumer tag's are in `tag_claims`."""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.domain import errors
from deadletter.domain.model import Message, Queue
from deadletter.engine import counters, tags, transitions
from deadletter.engine.lookups import held_rows
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction


def acknowledge(
    tx: Transaction,
    pending: Pending,
    queue: Queue,
    held: Sequence[tuple[str, str | None]],
    now: float,
    strict: bool,
) -> list[bool | errors.DeadletterError]:
    """Acknowledge (message id, claim id) pairs for the untagged consumers; per pair,
    whether it was deleted or why it was refused."""
    project, name = queue.project, queue.name
    deleted: set[str] = set()
    claims = {cid for _, cid in held}
    if len(claims) == 1 and None not in claims and not queue.settings.consumer_tags:
        # The common acknowledgement, a batch under one claim, in one statement; only what
        # it leaves is read, to say why.
        ids = [mid for mid, _ in held]
        deleted = set(tx.delete_held(project, name, ids, str(*claims), now, strict))
    rest = [(mid, cid) for mid, cid in held if mid not in deleted]
    # Locked: a give-back and a new claim committed meanwhile must not be deleted under the
    # claim this read saw.
    rows = held_rows(tx, project, name, [mid for mid, _ in rest], now) if rest else []
    found = {m.id: m for m in tags.not_done_by_default(rows)}
    verdicts = [transitions.may_delete(found.get(mid), mid, cid, now, strict) for mid, cid in rest]
    gone = [found[mid] for (mid, _), ok in zip(rest, verdicts, strict=True) if ok is True]
    count = len(deleted) + (finished(tx, queue, gone) if gone else 0)
    if count:
        tx.bump_counter(project, name, counters.ACKNOWLEDGED, count)
        pending.calls.append(lambda lst: lst.acknowledged(project, name, count))
    answers = iter(verdicts)
    return [True if mid in deleted else next(answers) for mid, _ in held]


def finished(tx: Transaction, queue: Queue, messages: Sequence[Message]) -> int:
    """The untagged consumers are done with `messages`: they leave the queue, or, on a
    queue with tags, stay until the tags are done too. How many."""
    if queue.settings.consumer_tags:
        tags.finish_default(tx, queue, messages)
        return len({m.id for m in messages})
    return tx.delete_messages(queue.project, queue.name, [m.id for m in messages])
