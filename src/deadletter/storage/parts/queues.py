"""Queues and their settings, and which queues dead-letter into which."""

from __future__ import annotations

import abc

from deadletter.domain.model import Queue, QueueSettings


class Queues(abc.ABC):
    """Queues and their settings, and which queues dead-letter into which."""

    @abc.abstractmethod
    def get_queue(self, project: str, name: str, lock: bool = False) -> Queue | None:
        """With `lock`, concurrent transactions that lock the same queue wait for this one."""

    @abc.abstractmethod
    def count_queues(self, project: str) -> int:
        """How many queues the tenant `project` holds, in its own project and in those derived
        from its name (`<tenant>@<region>`). Concurrent counts of one tenant wait for one
        another until each transaction ends, so a count followed by an insert is exact."""

    @abc.abstractmethod
    def insert_queue(self, queue: Queue) -> None:
        """When (project, name) is taken the transaction fails with QueueAlreadyExists."""

    @abc.abstractmethod
    def update_queue(
        self, project: str, name: str, settings: QueueSettings, now: float
    ) -> None: ...

    @abc.abstractmethod
    def delete_queue(self, project: str, name: str) -> bool:
        """Delete the queue, its messages, claims, counters and tasks."""

    @abc.abstractmethod
    def list_queues(
        self, project: str, prefix: str | None, after: str | None, limit: int
    ) -> list[Queue]: ...

    @abc.abstractmethod
    def sources_of(self, project: str, dlq: str) -> list[Queue]:
        """Queues whose dead-letter policy names `dlq`, active or not."""

    @abc.abstractmethod
    def dead_letter_targets(self, project: str) -> set[str]:
        """Names that some queue's active policy uses as its DLQ."""
