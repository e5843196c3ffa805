"""Acknowledgements inside a transaction: a consumer group done with messages it holds (or
that nobody holds), by the rules of `Engine.delete_message`."""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.domain import errors
from deadletter.engine import transitions
from deadletter.engine.groups import ConsumerGroup
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction


def acknowledge(
    tx: Transaction,
    pending: Pending,
    group: ConsumerGroup,
    *,
    held: Sequence[tuple[str, str | None]],
    now: float,
    strict: bool,
) -> list[bool | errors.DeadletterError]:
    """Acknowledge (message id, claim id) pairs for `group`; per pair, whether it was
    deleted or why it was refused. A message the group is done with, or never sees, is not
    found."""
    deleted: set[str] = set()
    claims = {cid for _, cid in held}
    if len(claims) == 1 and None not in claims:
        # The common acknowledgement, a batch under one claim, in one statement where the
        # group can; only what it leaves is read, to say why.
        deleted = group.acknowledge_at_once(tx, [mid for mid, _ in held], str(*claims), now, strict)
    rest = [(mid, cid) for mid, cid in held if mid not in deleted]
    # Locked: a give-back and a new claim committed meanwhile must not be acknowledged under
    # the claim this read saw.
    rows = group.acknowledgeable(tx, [mid for mid, _ in rest], now) if rest else []
    found = {m.id: m for m in rows}
    verdicts = [transitions.may_delete(found.get(mid), mid, cid, now, strict) for mid, cid in rest]
    gone = {mid: found[mid] for (mid, _), ok in zip(rest, verdicts, strict=True) if ok is True}
    count = len(deleted) + (group.finish(tx, list(gone.values())) if gone else 0)
    if count:
        group.acknowledged(tx, pending, count)
    answers = iter(verdicts)
    return [True if mid in deleted else next(answers) for mid, _ in held]
