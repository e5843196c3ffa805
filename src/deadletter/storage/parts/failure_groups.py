"""Failure groups: filters saved on a DLQ, its archived dead letters, and its discard log."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from deadletter.domain.failure_groups import Archived, DiscardRecord, SavedFilter


class FailureGroups(abc.ABC):
    """Filters saved on a DLQ, dead letters archived out of it, and the record of what left."""

    @abc.abstractmethod
    def save_filter(self, project: str, dlq: str, saved: SavedFilter) -> None:
        """Insert or replace the filter of that name."""

    @abc.abstractmethod
    def get_filter(self, project: str, dlq: str, name: str) -> SavedFilter | None: ...

    @abc.abstractmethod
    def list_filters(self, project: str, dlq: str) -> list[SavedFilter]:
        """By name."""

    @abc.abstractmethod
    def delete_filter(self, project: str, dlq: str, name: str) -> bool: ...

    @abc.abstractmethod
    def insert_archived(self, project: str, archived: Sequence[Archived]) -> None:
        """Keep these dead letters in the archive (the caller deletes them from their DLQ)."""

    @abc.abstractmethod
    def archived(
        self, project: str, dlq: str, *, after_seq: int, limit: int, lock: bool = False
    ) -> list[Archived]:
        """Up to `limit` archived dead letters of `dlq` after `after_seq`, by their seq in
        the DLQ when they were archived."""

    @abc.abstractmethod
    def delete_archived(self, project: str, ids: Sequence[str]) -> int: ...

    @abc.abstractmethod
    def archives_due(self, now: float, limit: int) -> list[tuple[str, Archived]]:
        """(project, archived) of up to `limit` whose retention ended, locked."""

    @abc.abstractmethod
    def count_mentioning(self, project: str, dlq: str, *, after_seq: int, text: str) -> int:
        """How many dead letters of `dlq` after `after_seq` hold `text` in their history (a
        redrive task's id: those it sent back that died again), in one statement."""

    @abc.abstractmethod
    def insert_discard(self, record: DiscardRecord) -> None: ...

    @abc.abstractmethod
    def update_discard(self, record: DiscardRecord) -> None:
        """Its count and sample ids."""

    @abc.abstractmethod
    def list_discards(
        self, project: str, dlq: str, *, before: str | None, limit: int
    ) -> list[DiscardRecord]:
        """Newest first; `before`: only records older than the one of this id."""
