"""Claims: handing messages to a consumer, and the poisoned ones to the DLQ on the way."""

from __future__ import annotations

from dataclasses import replace

from deadletter.domain.model import Claim, Message, Queue, Reason
from deadletter.engine import dead_letters, fifo, transitions
from deadletter.engine.ids import new_id
from deadletter.engine.lookups import live_claim, live_messages
from deadletter.engine.transactions import Pending
from deadletter.storage.base import ClaimRecord, Transaction


def claim(
    tx: Transaction,
    pending: Pending,
    queue: Queue,
    limit: int,
    claim_ttl: int,
    grace: int,
    now: float,
) -> Claim:
    """Claim up to `limit` messages of `queue`, oldest first; those delivered `max_claims`
    times already move to the DLQ instead, and the claim holds only what was delivered."""
    project, name = queue.project, queue.name
    policy = queue.settings.dead_letter
    claim_id = new_id()
    expires = now + claim_ttl
    delivered: list[Message] = []
    while len(delivered) < limit:
        candidates = fifo.claimable(tx, queue, now, limit - len(delivered))
        if not candidates:
            break
        poisoned = [m for m in candidates if transitions.poisoned(m, policy)]
        fresh = [
            transitions.last_delivery(transitions.claimed(m, claim_id, now, expires, grace), policy)
            for m in candidates
            if not transitions.poisoned(m, policy)
        ]
        tx.update_messages(project, fresh)
        delivered += fresh
        if not poisoned:
            break
        dead_letters.past_limit(tx, pending, queue, poisoned, Reason.MAX_CLAIMS, now)
    if delivered:
        tx.insert_claim(ClaimRecord(claim_id, project, name, claim_ttl, grace, now, expires))
        count = len(delivered)
        pending.calls.append(lambda lst: lst.claimed(project, name, count))
    return Claim(claim_id, name, claim_ttl, grace, now, expires, tuple(delivered))


def given_back(
    tx: Transaction,
    pending: Pending,
    queue: Queue,
    messages: list[Message],
    now: float,
    delay: int = 0,
) -> list[Message]:
    """Held messages a consumer gives back (a nack, a released claim, visibility 0), as they
    are now: those delivered as often as the policy allows leave for the DLQ at once (or are
    dropped when not eligible) instead of waiting, visible, for another claim; the others are
    visible again after `delay` seconds."""
    policy = queue.settings.dead_letter
    spent = [m for m in messages if transitions.poisoned(m, policy)]
    spent_ids = {m.id for m in spent}
    back = [transitions.unclaimed(m, now, delay) for m in messages if m.id not in spent_ids]
    tx.update_messages(queue.project, back)
    if back and delay == 0:
        pending.available.add((queue.project, queue.name))
    moved = dead_letters.past_limit(tx, pending, queue, spent, Reason.MAX_CLAIMS, now)
    return back + moved


def get(tx: Transaction, project: str, queue: str, claim_id: str, now: float) -> Claim:
    record = live_claim(tx, project, queue, claim_id, now)
    messages = tuple(live_messages(tx, project, queue, claim_id, now))
    return Claim(
        record.id, queue, record.ttl, record.grace, record.created_at, record.expires_at, messages
    )


def renew(
    tx: Transaction,
    project: str,
    queue: str,
    claim_id: str,
    ttl: int,
    grace: int | None,
    now: float,
) -> Claim:
    """The claim's messages held `ttl` seconds from now, with the claim's grace or `grace`."""
    record = live_claim(tx, project, queue, claim_id, now, lock=True)
    new_grace = record.grace if grace is None else grace
    expires = now + ttl
    renewed = [
        transitions.renewed(m, expires, new_grace)
        for m in live_messages(tx, project, queue, claim_id, now, lock=True)
    ]
    tx.update_messages(project, renewed)
    tx.update_claim(replace(record, ttl=ttl, grace=new_grace, expires_at=expires))
    return Claim(claim_id, queue, ttl, new_grace, record.created_at, expires, tuple(renewed))
