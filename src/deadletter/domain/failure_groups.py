"""Failure groups handled as units: filters saved on a DLQ by name, dead letters archived out
of its active view for a stated retention, and the record kept of what left it and why."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from deadletter.domain.model import DeadLetterFilter, Message

# How long archived dead letters are kept when an archive names no retention, and the range
# one may name (seconds): from a minute to a year.
DEFAULT_RETENTION = 30 * 86_400
MIN_RETENTION = 60
MAX_RETENTION = 366 * 86_400
# Filters one DLQ may save.
MAX_SAVED_FILTERS = 100
# A discard's reason, and how many of the discarded ids its record keeps.
MAX_REASON = 1024
SAMPLE_IDS = 20
# The reason of the record the sweep writes when an archive's retention ends.
RETENTION_ENDED = "archive retention ended"


@dataclass(frozen=True)
class SavedFilter:
    """A filter kept on a DLQ by name, as given: its ages stay relative and its pattern a
    pattern, read again at each use."""

    name: str
    filter: DeadLetterFilter
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class Archived:
    """A dead letter out of its DLQ's active view, kept until `keep_until`."""

    message: Message
    archived_at: float
    keep_until: float


class Departure(StrEnum):
    """How dead letters left a DLQ for good, as its discard log says."""

    DISCARDED = "discarded"  # deleted by someone, with a reason
    ARCHIVE_EXPIRED = "archive_expired"  # an archive's retention ended


@dataclass(frozen=True)
class DiscardRecord:
    """What left a DLQ for good (`count`, the `selection` as given, the first ids and the
    failure patterns named), why (`reason`), who (`by`) and when (`at`)."""

    id: str
    project: str
    dlq: str
    kind: Departure
    at: float
    by: dict[str, Any] | None
    reason: str
    selection: dict[str, Any]
    count: int
    sample_ids: tuple[str, ...]

    def with_more(self, ids: list[str]) -> DiscardRecord:
        """The record after one more batch of `ids` left."""
        room = SAMPLE_IDS - len(self.sample_ids)
        sample = (*self.sample_ids, *ids[: max(room, 0)])
        return DiscardRecord(
            self.id, self.project, self.dlq, self.kind, self.at, self.by, self.reason,
            self.selection, self.count + len(ids), sample,
        )  # fmt: skip


@dataclass(frozen=True)
class Follow:
    """How a retried group fared: of the dead letters a redrive task sent back, how many are
    dead again in its DLQ, and how many are not (handled, or still in their queues)."""

    redriven: int
    came_back_dead: int

    @property
    def still_out(self) -> int:
        return max(self.redriven - self.came_back_dead, 0)
