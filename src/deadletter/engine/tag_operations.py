"""The consumer-tag side of the engine's façade: tags as a resource of a queue. `Engine`
inherits these; the `tag` selector of its claim and message operations is in `engine`, the
rules in `tags`, `groups` and the steps they serve."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from deadletter.clock import Clock
from deadletter.domain import errors, routing
from deadletter.domain.model import RESERVED_ATTRIBUTE_PREFIX, Queue
from deadletter.domain.policies import DeadLetterPolicy, GroupPolicy, RetryPolicy
from deadletter.domain.tags import ConsumerTag, TagCounts
from deadletter.engine import tags
from deadletter.engine.lookups import require_queue
from deadletter.engine.transactions import Pending, Runner
from deadletter.storage.base import Transaction


@dataclass(frozen=True)
class TagInfo:
    tag: ConsumerTag
    counts: TagCounts
    # The tag's own policy (None: the queue's), and the policy it dead-letters by once the
    # queue's fills in what it leaves unset (None: it dead-letters nothing).
    policy: GroupPolicy | None = None
    effective: DeadLetterPolicy | None = None
    retry: RetryPolicy | None = None


def _infos(tx: Transaction, project: str, queue: str, now: float) -> list[TagInfo]:
    """The tags of `queue`, each with its counts and policies (none: no queue); the queue is
    read only when it has tags."""
    listed = tx.list_tags(project, queue)
    found = tx.get_queue(project, queue) if listed else None
    return [] if found is None else [_info(tx, found, t, now) for t in listed]


def _info(tx: Transaction, queue: Queue, tag: ConsumerTag, now: float) -> TagInfo:
    s = queue.settings
    return TagInfo(
        tag,
        tags.counts(tx, tag, now),
        policy=s.tag_policies.get(tag.name),
        effective=routing.group_policy(s, tag.name),
        retry=routing.retry_for(s, tag.name),
    )


class TagOperations:
    clock: Clock
    _runner: Runner

    def create_tag(
        self,
        project: str,
        queue: str,
        *,
        name: str,
        start_at: float | None = None,
        filter_attribute: str | None = None,
        filter_value: str | None = None,
        policy: GroupPolicy | None = None,
    ) -> ConsumerTag:
        """A consumer group on `queue` that receives every message sent from now on (or
        enqueued since `start_at`), with `filter_attribute` equal to `filter_value` if given."""
        tags.check_name(name)
        if (filter_attribute is None) != (filter_value is None):
            raise errors.InvalidInput("a tag's filter names an attribute and its value")
        if filter_attribute is not None and (
            not filter_attribute or filter_attribute.upper().startswith(RESERVED_ATTRIBUTE_PREFIX)
        ):
            raise errors.InvalidInput(f"{filter_attribute!r} is not a user attribute's name")
        if start_at is not None and start_at < 0:
            raise errors.InvalidInput("a tag's start time is a time since the epoch")
        now = self.clock.now()

        def work(tx: Transaction, _: Pending) -> ConsumerTag:
            tag = tags.create(
                tx,
                project,
                queue,
                name=name,
                start_at=start_at,
                filter_attribute=filter_attribute,
                filter_value=filter_value,
                now=now,
            )
            if policy is not None:
                tags.set_policy(tx, project, queue, name=name, change=lambda _: policy, now=now)
            return tag

        return self._runner.run(work)

    def change_tag_policy(
        self, project: str, queue: str, *, name: str, change: Callable[[GroupPolicy], GroupPolicy]
    ) -> None:
        """The tag's own max claims, retry backoff and DLQ become what `change` makes of
        them, read and written in one transaction, so that two changes of different fields
        never lose one another; each left unset takes the queue's (an empty policy: all of
        them). Its DLQ is checked as the queue's is."""
        now = self.clock.now()
        self._runner.run(
            lambda tx, _: tags.set_policy(tx, project, queue, name=name, change=change, now=now)
        )

    def list_tags(self, project: str, queue: str) -> list[TagInfo]:
        def work(tx: Transaction) -> list[TagInfo]:
            require_queue(tx, project, queue)
            return _infos(tx, project, queue, self.clock.now())

        return self._runner.read(work)

    def tags_of(self, queues: Iterable[tuple[str, str]]) -> list[TagInfo]:
        """The tags of each (project, queue), with their counts, in one read; a queue that
        does not exist (any more) has none."""

        def work(tx: Transaction) -> list[TagInfo]:
            now = self.clock.now()
            return [info for project, queue in queues for info in _infos(tx, project, queue, now)]

        return self._runner.read(work)

    def get_tag(self, project: str, queue: str, *, name: str) -> TagInfo:
        def work(tx: Transaction) -> TagInfo:
            found = require_queue(tx, project, queue)
            tag = tags.require_tag(tx, project, queue, name)
            return _info(tx, found, tag, self.clock.now())

        return self._runner.read(work)

    def delete_tag(self, project: str, queue: str, *, name: str) -> None:
        """Delete a tag: its deliveries end, and messages that only it still needed leave."""
        self._runner.run(lambda tx, _: tags.delete(tx, project, queue, name, self.clock.now()))
