"""What gauges and stats read: a queue's, a source's and a group's counts; named counters."""

from __future__ import annotations

import abc
from dataclasses import dataclass

from deadletter.domain.model import DeadLetterFilter, Message
from deadletter.domain.tags import ConsumerTag


@dataclass(frozen=True)
class MessageCounts:
    free: int
    claimed: int
    delayed: int
    oldest: Message | None
    newest: Message | None


class Counts(abc.ABC):
    """What gauges and stats read: a queue's, a source's and a group's counts; named counters."""

    @abc.abstractmethod
    def counts(self, project: str, queue: str, now: float, backoff: int = 0) -> MessageCounts:
        """What `queue` holds at `now`; it costs the same at any depth (the sweep settles
        what time has changed). With `backoff`, the longest backoff of the queue's retry
        policy, a message whose claim lapsed and that serves its backoff is delayed, not
        claimed (read among what becomes visible within `backoff` seconds)."""

    @abc.abstractmethod
    def size(self, project: str, queue: str, now: float, with_bytes: bool) -> tuple[int, int]:
        """How many unexpired messages `queue` holds (visible, delayed or claimed) and, with
        `with_bytes`, the bytes of their bodies (else 0): what a bounded queue's bound counts.
        The count costs the same at any depth; the bytes are read from the queue's rows."""

    @abc.abstractmethod
    def count_by_source(self, project: str, dlq: str, now: float) -> dict[str, int]: ...

    @abc.abstractmethod
    def count_dead_letters(
        self, project: str, dlq: str, now: float, where: DeadLetterFilter, max_seq: int
    ) -> int: ...

    @abc.abstractmethod
    def tag_counts(self, tag: ConsumerTag, now: float) -> tuple[int, int]:
        """(ready, claimed) of `tag`'s unexpired messages."""

    @abc.abstractmethod
    def count_default_done(self, project: str, queue: str, now: float) -> int:
        """Unexpired messages the untagged consumers are done with, kept for tags."""

    # Counters: per queue, by name ("acknowledged", "expired_dropped", "dead_lettered.<reason>")
    @abc.abstractmethod
    def bump_counter(self, project: str, queue: str, name: str, amount: int) -> None: ...

    @abc.abstractmethod
    def counters(self, project: str, queue: str) -> dict[str, int]: ...
