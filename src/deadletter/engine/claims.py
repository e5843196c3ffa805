"""Claims of any consumer group: handing messages to a consumer, the poisoned ones to the DLQ
on the way, and giving them back."""

from __future__ import annotations

from dataclasses import replace

from deadletter.domain.model import Claim, Message
from deadletter.domain.provenance import Reason
from deadletter.engine import dead_letters, transitions
from deadletter.engine.groups import ConsumerGroup
from deadletter.engine.ids import new_id
from deadletter.engine.lookups import live_claim
from deadletter.engine.transactions import Pending
from deadletter.storage.base import ClaimRecord, Transaction


def claim(
    tx: Transaction,
    pending: Pending,
    group: ConsumerGroup,
    *,
    limit: int,
    claim_ttl: int,
    grace: int,
    now: float,
) -> Claim:
    """Claim up to `limit` messages for `group`, oldest first; those delivered `max_claims`
    times already move to the DLQ instead, those the group does not deliver (a tag's filter)
    are passed over, and the claim holds only what was delivered."""
    queue = group.queue
    project, name = queue.project, queue.name
    policy, retry = group.policy(Reason.MAX_CLAIMS), group.retry()
    claim_id = new_id()
    expires = now + claim_ttl
    record = ClaimRecord(
        id=claim_id,
        project=project,
        queue=name,
        ttl=claim_ttl,
        grace=grace,
        created_at=now,
        expires_at=expires,
    )
    # Where the group can, the store takes and claims the messages in one step and the rule
    # is applied to what it took: the poisoned ones then leave the claim for the DLQ.
    at_once = group.takes_at_once()
    taken = False
    delivered: list[Message] = []
    while len(delivered) < limit:
        wanted = limit - len(delivered)
        if at_once:
            found = group.take(tx, record, now=now, limit=wanted, live_until=expires + grace)
        else:
            found = group.claimable(tx, now, wanted)
        if not found:
            break
        taken = True
        matching = group.skip_unmatched(tx, found)
        poisoned = [m for m in matching if transitions.poisoned(m, policy)]
        kept: list[Message] = []
        if poisoned:
            # Those a full DLQ refuses stay, and are delivered once more: never lost.
            kept = dead_letters.past_limit(
                tx, pending, group, messages=poisoned, reason=Reason.MAX_CLAIMS, now=now
            ).kept
        kept_ids = {m.id for m in kept}
        fresh = [
            transitions.last_delivery(
                transitions.claimed(
                    m, claim_id=claim_id, now=now, expires=expires, grace=grace, retry=retry
                ),
                policy,
            )
            for m in matching
            if not transitions.poisoned(m, policy) or m.id in kept_ids
        ]
        if at_once:
            # Taken as `transitions.claimed` makes them; a last delivery also falls due.
            group.hold(tx, [m for m in fresh if m.dead_letter_due_at is not None])
        else:
            group.hold_claimed(tx, fresh, now, expires + grace)
        delivered += fresh
        if not poisoned and len(matching) == len(found):
            break
    group.claim_ended(tx)
    if at_once and taken and not delivered:
        tx.delete_claim(project, name, claim_id)  # recorded as it took what left for the DLQ
    elif delivered and not at_once:
        tx.insert_claim(record)
    if delivered:
        group.claimed(pending, len(delivered))
    return Claim(
        id=claim_id,
        queue=name,
        ttl=claim_ttl,
        grace=grace,
        created_at=now,
        expires_at=expires,
        messages=tuple(delivered),
    )


def given_back(
    tx: Transaction,
    pending: Pending,
    group: ConsumerGroup,
    *,
    messages: list[Message],
    now: float,
    delay: int | None = None,
) -> list[Message]:
    """Held messages a consumer gives back (a nack, a released claim, visibility 0), as they
    are now: those delivered as often as the policy allows leave for the DLQ at once (or are
    dropped when not eligible) instead of waiting, visible, for another claim; the others are
    visible again after `delay` seconds, or when none is given, after the queue's retry
    policy's backoff for their delivery count."""
    queue = group.queue
    policy = group.policy(Reason.MAX_CLAIMS)
    spent = [m for m in messages if transitions.poisoned(m, policy)]
    # Those a full DLQ refuses are given back like the others: never lost.
    moved = dead_letters.past_limit(
        tx, pending, group, messages=spent, reason=Reason.MAX_CLAIMS, now=now
    )
    spent_ids = {m.id for m in spent} - {m.id for m in moved.kept}
    back = [
        transitions.unclaimed(m, now, transitions.backoff(m, group.retry(), delay))
        for m in messages
        if m.id not in spent_ids
    ]
    group.hold(tx, back)
    if any(m.visible_at <= now for m in back):
        pending.available.add((queue.project, queue.name))
    return back + moved.stored


def get(tx: Transaction, group: ConsumerGroup, claim_id: str, now: float) -> Claim:
    queue = group.queue
    record = live_claim(tx, queue.project, queue.name, claim_id=claim_id, now=now)
    messages = tuple(group.claimed_by(tx, claim_id, now))
    return Claim(
        id=record.id,
        queue=queue.name,
        ttl=record.ttl,
        grace=record.grace,
        created_at=record.created_at,
        expires_at=record.expires_at,
        messages=messages,
    )


def renew(
    tx: Transaction,
    group: ConsumerGroup,
    *,
    claim_id: str,
    ttl: int,
    grace: int | None,
    now: float,
) -> Claim:
    """The claim's messages held `ttl` seconds from now, with the claim's grace or `grace`."""
    queue = group.queue
    record = live_claim(tx, queue.project, queue.name, claim_id=claim_id, now=now, lock=True)
    new_grace = record.grace if grace is None else grace
    expires = now + ttl
    renewed = [
        transitions.renewed(m, expires, new_grace, group.retry())
        for m in group.claimed_by(tx, claim_id, now, lock=True)
    ]
    group.hold(tx, renewed)
    tx.update_claim(replace(record, ttl=ttl, grace=new_grace, expires_at=expires))
    return Claim(
        id=claim_id,
        queue=queue.name,
        ttl=ttl,
        grace=new_grace,
        created_at=record.created_at,
        expires_at=expires,
        messages=tuple(renewed),
    )


def release(
    tx: Transaction, pending: Pending, group: ConsumerGroup, claim_id: str, now: float
) -> int:
    """Give back every message the claim still holds; how many."""
    held = group.claimed_by(tx, claim_id, now, lock=True)
    given_back(tx, pending, group, messages=held, now=now)
    return len(held)
