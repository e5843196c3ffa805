"""A consumer tag's deliveries: claims, acknowledgements, give-backs and dead letters of one
tag, none of which touches the queue's own delivery state or any other tag's.

Messages are handled as the tag sees them (`deadletter.domain.tags.seen_by_tag`), so the
transitions of `transitions` apply unchanged; what they return is written to the tag's
states. A tag's dead letter is a copy: the message stays in its queue for the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from deadletter.domain import errors
from deadletter.domain.model import Claim, Message, Queue, Reason
from deadletter.domain.tags import ConsumerTag, TagState
from deadletter.engine import dead_letters, tags, transitions
from deadletter.engine.ids import new_id
from deadletter.engine.lookups import each_held, held_by, live_claim, require_queue
from deadletter.engine.transactions import Pending
from deadletter.storage.base import ClaimRecord, Transaction


def claim(
    tx: Transaction,
    pending: Pending,
    queue: Queue,
    tag_name: str,
    limit: int,
    claim_ttl: int,
    grace: int,
    now: float,
) -> Claim:
    """Claim up to `limit` messages for one tag, oldest first. The tag's row is locked, so
    the tag's claimants take turns and never hand out a message twice; messages its filter
    does not match are marked skipped on the way, and those it delivered `max_claims` times
    are dead-lettered for it."""
    project, name = queue.project, queue.name
    tag = tags.require_tag(tx, project, name, tag_name, lock=True)
    policy = queue.settings.dead_letter
    claim_id = new_id()
    expires = now + claim_ttl
    delivered: list[Message] = []
    while len(delivered) < limit:
        found = [m for m, _ in tx.tag_claimable(tag, now, limit - len(delivered))]
        if not found:
            break
        skipped = [m for m in found if not tag.matches(m)]
        matching = [m for m in found if tag.matches(m)]
        poisoned = [m for m in matching if transitions.poisoned(m, policy)]
        fresh = [
            transitions.claimed(m, claim_id, now, expires, grace)
            for m in matching
            if not transitions.poisoned(m, policy)
        ]
        tx.save_tag_states(project, name, tag.name, fresh, TagState.LIVE)
        delivered += fresh
        if skipped:
            tx.save_tag_states(project, name, tag.name, skipped, TagState.SKIPPED)
            tags.settle(tx, queue, [m.id for m in skipped])
        if poisoned:
            dead_letter(tx, pending, queue, tag, poisoned, Reason.MAX_CLAIMS, now)
        if not skipped and not poisoned:
            break
    tx.advance_tag_cursor(tag)
    if delivered:
        tx.insert_claim(ClaimRecord(claim_id, project, name, claim_ttl, grace, now, expires))
        count = len(delivered)
        pending.calls.append(lambda lst: lst.claimed(project, name, count))
        _tag_event(pending, queue, tag.name, "claimed", count)
    return Claim(claim_id, name, claim_ttl, grace, now, expires, tuple(delivered))


def _tag_event(pending: Pending, queue: Queue, tag: str, event: str, count: int) -> None:
    project, name = queue.project, queue.name
    pending.calls.append(lambda lst: lst.tag_delivery(project, name, tag, event, count))


def dead_letter(
    tx: Transaction,
    pending: Pending,
    queue: Queue,
    tag: ConsumerTag,
    messages: Sequence[Message],
    reason: Reason,
    now: float,
    description: str | None = None,
    error: str | None = None,
) -> list[Message]:
    """Dead-letter `messages` (as the tag sees them) for `tag` only: a copy of each eligible
    one goes to the DLQ naming the tag, and the tag is done with all of them (those not
    eligible are dropped for it). The caller has checked that the policy is active."""
    policy = queue.settings.dead_letter
    assert policy is not None and policy.active, "callers check the policy"
    project = queue.project
    dlq = require_queue(tx, project, policy.target)
    eligible, _ = transitions.split_eligible(list(messages))
    copies = [
        replace(
            transitions.dead_lettered(m, queue, dlq, reason, now, description, error, tag.name),
            id=new_id(),
        )
        for m in eligible
    ]
    tx.insert_messages(project, copies)  # new rows: the message itself stays for the others
    tx.save_tag_states(project, queue.name, tag.name, messages, TagState.DEAD_LETTERED)
    tx.bump_counter(project, queue.name, tags.dead_lettered_counter(tag.name), len(messages))
    tags.settle(tx, queue, [m.id for m in messages])
    _tag_event(pending, queue, tag.name, "dead_lettered", len(messages))
    if copies:
        dead_letters.announce(pending, project, queue.name, dlq.name, reason, len(copies))
    return copies


def acknowledge(
    tx: Transaction,
    pending: Pending,
    queue: Queue,
    tag_name: str,
    held: Sequence[tuple[str, str | None]],
    now: float,
    strict: bool,
) -> list[bool | errors.DeadletterError]:
    """Acknowledge (message id, claim id) pairs for one tag, each by the rules of
    `Engine.delete_message`; a message the tag is done with, or never sees, is not found."""
    tag = tags.require_tag(tx, queue.project, queue.name, tag_name)
    ids = [mid for mid, _ in held]
    found = {
        m.id: m
        # Locked: a give-back and a new claim committed meanwhile must not be acknowledged
        # under the claim this read saw.
        for m, state in tx.tag_messages(queue.project, queue.name, tag.name, ids, lock=True)
        if m.expires_at > now and (state is None or not state.final) and tag.sees(m)
    }
    results = [transitions.may_delete(found.get(mid), mid, cid, now, strict) for mid, cid in held]
    done = list(
        {mid: found[mid] for (mid, _), ok in zip(held, results, strict=True) if ok is True}.values()
    )
    if done:
        tx.save_tag_states(queue.project, queue.name, tag.name, done, TagState.ACKNOWLEDGED)
        tx.bump_counter(queue.project, queue.name, tags.acknowledged_counter(tag.name), len(done))
        tags.settle(tx, queue, [m.id for m in done])
        project, name, count = queue.project, queue.name, len(done)
        pending.calls.append(lambda lst: lst.acknowledged(project, name, count))
        _tag_event(pending, queue, tag.name, "acknowledged", count)
    return results


def held_message(
    tx: Transaction, queue: Queue, tag: str, message_id: str, claim_id: str, now: float
) -> Message:
    """An unexpired message that `claim_id` holds for `tag` right now, as the tag sees it;
    the tag's state of it stays locked for the write that follows."""
    return held_by(held_rows(tx, queue, tag, [message_id], now), message_id, claim_id, now)


def held_rows(
    tx: Transaction, queue: Queue, tag: str, ids: Sequence[str], now: float
) -> list[Message]:
    """The unexpired messages among `ids` that `tag` holds live, their states locked for a
    write that starts from them, oldest first (`lookups.held_rows` for a tag)."""
    return [
        m
        for m, state in tx.tag_messages(queue.project, queue.name, tag, ids, lock=True)
        if m.expires_at > now and state is TagState.LIVE
    ]


def given_back(
    tx: Transaction,
    pending: Pending,
    queue: Queue,
    tag_name: str,
    messages: list[Message],
    now: float,
    delay: int = 0,
) -> list[Message]:
    """Held messages the tag's consumer gives back: visible to the tag again after `delay`,
    or dead-lettered for it at once when delivered as often as the policy allows."""
    tag = tags.require_tag(tx, queue.project, queue.name, tag_name)
    policy = queue.settings.dead_letter
    spent = [m for m in messages if transitions.poisoned(m, policy)]
    spent_ids = {m.id for m in spent}
    back = [transitions.unclaimed(m, now, delay) for m in messages if m.id not in spent_ids]
    tx.save_tag_states(queue.project, queue.name, tag.name, back, TagState.LIVE)
    if spent:
        dead_letter(tx, pending, queue, tag, spent, Reason.MAX_CLAIMS, now)
    return back + spent


def visibility_changed(
    tx: Transaction, queue: Queue, tag: str, message: Message, now: float, timeout: int
) -> Message:
    changed = transitions.visibility_changed(message, now, timeout)
    tx.save_tag_states(queue.project, queue.name, tag, [changed], TagState.LIVE)
    return changed


def live_messages(
    tx: Transaction, queue: Queue, tag: str, claim_id: str, now: float, lock: bool = False
) -> list[Message]:
    """As `lookups.live_messages`, for one tag; `lock` locks the tag's states of them."""
    found = tx.tag_claimed_by(queue.project, queue.name, tag, claim_id, lock=lock)
    return [m for m in found if m.is_claimed(now)]


def get(tx: Transaction, queue: Queue, tag: str, claim_id: str, now: float) -> Claim:
    tags.require_tag(tx, queue.project, queue.name, tag)
    record = live_claim(tx, queue.project, queue.name, claim_id, now)
    messages = tuple(live_messages(tx, queue, tag, claim_id, now))
    return Claim(
        record.id, queue.name, record.ttl, record.grace, record.created_at, record.expires_at,
        messages,
    )  # fmt: skip


def renew(
    tx: Transaction,
    queue: Queue,
    tag: str,
    claim_id: str,
    ttl: int,
    grace: int | None,
    now: float,
) -> Claim:
    tags.require_tag(tx, queue.project, queue.name, tag)
    record = live_claim(tx, queue.project, queue.name, claim_id, now, lock=True)
    new_grace = record.grace if grace is None else grace
    expires = now + ttl
    renewed = [
        transitions.renewed(m, expires, new_grace)
        for m in live_messages(tx, queue, tag, claim_id, now, lock=True)
    ]
    tx.save_tag_states(queue.project, queue.name, tag, renewed, TagState.LIVE)
    tx.update_claim(replace(record, ttl=ttl, grace=new_grace, expires_at=expires))
    return Claim(claim_id, queue.name, ttl, new_grace, record.created_at, expires, tuple(renewed))


def reject(
    tx: Transaction,
    pending: Pending,
    queue: Queue,
    tag_name: str,
    held: Sequence[tuple[str, str]],
    now: float,
    description: str | None,
    error: str | None,
) -> list[Message]:
    """A consumer of the tag dead-letters messages it holds, for the tag only (reason
    `rejected`); all the pairs must be held, or nothing moves."""
    tag = tags.require_tag(tx, queue.project, queue.name, tag_name)
    policy = queue.settings.dead_letter
    if policy is None or not policy.active:
        raise errors.NoActiveDeadLetterPolicy(
            f"queue {queue.name!r} has no active dead-letter policy"
        )
    pairs = dict.fromkeys(held)
    found = held_rows(tx, queue, tag.name, [mid for mid, _ in pairs], now)
    messages = each_held(found, pairs, now)
    return dead_letter(tx, pending, queue, tag, messages, Reason.REJECTED, now, description, error)
