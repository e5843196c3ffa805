"""Consumer tags inside a transaction: creating and deleting them, and the rule that a message
leaves its queue once the untagged consumers and every tag that sees it are done with it.

The queue's settings carry its tags' names, so that every path that reads the queue knows
without another query whether it has any; a queue without tags takes none of these paths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from deadletter.domain import errors, names
from deadletter.domain.model import Message, Queue, QueueSettings
from deadletter.domain.policies import GroupPolicy
from deadletter.domain.tags import (
    DEFAULT_DONE_AT,
    MAX_TAGS_PER_QUEUE,
    ConsumerTag,
    TagCounts,
    default_done,
)
from deadletter.engine import queues
from deadletter.engine.lookups import require_queue
from deadletter.storage.base import Transaction


def acknowledged_counter(tag: str) -> str:
    return f"tag.{tag}.acknowledged"


def dead_lettered_counter(tag: str) -> str:
    return f"tag.{tag}.dead_lettered"


def require_tag(
    tx: Transaction, project: str, queue: str, name: str, lock: bool = False
) -> ConsumerTag:
    tag = tx.get_tag(project, queue, name, lock=lock)
    if tag is None:
        raise errors.TagNotFound(f"queue {queue!r} has no tag {name!r}")
    return tag


def check_name(name: str) -> None:
    if not names.TAG.valid(name):
        raise errors.InvalidInput("a tag name is 1-64 characters of letters, digits, '-' and '_'")


def create(
    tx: Transaction,
    project: str,
    queue_name: str,
    *,
    name: str,
    start_at: float | None,
    filter_attribute: str | None,
    filter_value: str | None,
    now: float,
) -> ConsumerTag:
    """A tag that sees the messages sent from now on, or, with `start_at`, those enqueued
    since then (older ones still in the queue included)."""
    queue = require_queue(tx, project, queue_name, lock=True)
    if queue.settings.fifo:
        # Its group order is kept by what is in flight on the message rows (docs/api.md).
        raise errors.InvalidInput(
            "a FIFO queue has no consumer tags: it keeps each message group's order for one"
            " consumer group; give each consumer group a FIFO queue of its own"
        )
    if name in queue.settings.consumer_tags:
        raise errors.TagAlreadyExists(f"queue {queue_name!r} already has a tag {name!r}")
    if len(queue.settings.consumer_tags) >= MAX_TAGS_PER_QUEUE:
        raise errors.InvalidInput(f"a queue has at most {MAX_TAGS_PER_QUEUE} tags")
    start_seq = tx.max_seq(project, queue_name) if start_at is None else 0
    tag = ConsumerTag(
        project=project,
        queue=queue_name,
        name=name,
        created_at=now,
        start_seq=start_seq,
        start_at=start_at or 0.0,
        filter_attribute=filter_attribute,
        filter_value=filter_value,
        cursor_seq=start_seq,
    )
    if not tx.insert_tag(tag):
        raise errors.TagAlreadyExists(f"queue {queue_name!r} already has a tag {name!r}")
    names = tuple(sorted({*queue.settings.consumer_tags, name}))
    settings = replace(queue.settings, consumer_tags=names)
    tx.update_queue(project, queue_name, settings, now)
    return tag


def set_policy(
    tx: Transaction,
    project: str,
    queue_name: str,
    *,
    name: str,
    change: Callable[[GroupPolicy], GroupPolicy],
    now: float,
) -> None:
    """The tag's own policy becomes what `change` makes of it (an empty one: the queue's,
    all of it), read and written with the queue's row locked."""
    queue = require_queue(tx, project, queue_name, lock=True)
    require_tag(tx, project, queue_name, name)
    policy = change(queue.settings.tag_policies.get(name) or GroupPolicy())
    tx.update_queue(
        project,
        queue_name,
        with_policy(tx, queue, queue.settings, name=name, policy=policy, now=now),
        now,
    )


def with_policy(
    tx: Transaction,
    queue: Queue,
    s: QueueSettings,
    *,
    name: str,
    policy: GroupPolicy | None,
    now: float,
) -> QueueSettings:
    """`s` with tag `name`'s own policy, checked with every DLQ the queue names."""
    policies = {k: p for k, p in s.tag_policies.items() if k != name}
    if policy is not None and not policy.empty:
        policies[name] = policy
    if policies == s.tag_policies:
        return s
    changed = replace(s, tag_policies=policies)
    return queues.checked(tx, queue.project, queue.name, changed, now)


def delete(tx: Transaction, project: str, queue_name: str, name: str, now: float) -> None:
    """The tag, its states and its counts go; messages that waited only for it leave."""
    queue = require_queue(tx, project, queue_name, lock=True)
    require_tag(tx, project, queue_name, name)
    tx.delete_tag(project, queue_name, name)
    for counter in (acknowledged_counter(name), dead_lettered_counter(name)):
        value = tx.counters(project, queue_name).get(counter, 0)
        if value:
            tx.bump_counter(project, queue_name, counter, -value)
    names = tuple(t for t in queue.settings.consumer_tags if t != name)
    policies = {k: p for k, p in queue.settings.tag_policies.items() if k != name}
    settings = replace(queue.settings, consumer_tags=names, tag_policies=policies)
    tx.update_queue(project, queue_name, settings, now)
    settle(tx, replace(queue, settings=settings), tx.default_done_ids(project, queue_name))


def counts(tx: Transaction, tag: ConsumerTag, now: float) -> TagCounts:
    ready, claimed = tx.tag_counts(tag, now)
    totals = tx.counters(tag.project, tag.queue)
    return TagCounts(
        ready=ready,
        claimed=claimed,
        acknowledged=totals.get(acknowledged_counter(tag.name), 0),
        dead_lettered=totals.get(dead_lettered_counter(tag.name), 0),
    )


def settle(tx: Transaction, queue: Queue, ids: Sequence[str]) -> int:
    """Delete those of `ids` that the untagged consumers and every tag that sees them are
    done with; how many. The messages are locked first, so that two groups finishing the
    same message at once never both leave it behind, each waiting for the other."""
    if not ids:
        return 0
    messages = tx.lock_messages(ids)
    if queue.settings.consumer_tags:
        tags = tx.list_tags(queue.project, queue.name)
        done = tx.final_tag_states([m.id for m in messages])
    else:
        tags, done = [], {}
    gone = [
        m.id
        for m in messages
        if (default_done(m) or not queue.settings.consumer_tags)
        and all(t.name in done.get(m.id, ()) or not t.sees(m) for t in tags)
    ]
    if gone:
        tx.delete_messages(queue.project, queue.name, gone)
        tx.forget_tag_states(gone)
    return len(gone)


def finish_default(tx: Transaction, queue: Queue, messages: Sequence[Message]) -> None:
    """The untagged consumers are done with `messages` (acknowledged, dead-lettered, dropped):
    on a queue with tags they stay for the tags, out of the untagged consumers' sight."""
    done = [
        replace(
            m,
            claim_id=None,
            claim_expires_at=None,
            visible_at=DEFAULT_DONE_AT,
            dead_letter_due_at=None,
        )
        for m in messages
    ]
    tx.update_messages(queue.project, done)
    settle(tx, queue, [m.id for m in done])


def not_done_by_default(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if not default_done(m)]
