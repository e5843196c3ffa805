"""A DLQ's failure patterns as the analysis hands them in: the pattern each dead letter
belongs to, and what merging a writer's batch of them did."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Assignment:
    """A dead letter belongs to a failure pattern; `dead_lettered_at` in epoch seconds."""

    message_id: str
    pattern_id: str
    template: str | None = None
    signature: str | None = None
    dead_lettered_at: float | None = None


@dataclass(frozen=True)
class MergedBatch:
    """What merging a batch of assignments did: `merged` is False for a batch the writer
    merged already."""

    merged: bool
    last_batch: int
    patterns: int
    alerts: list[tuple[str, str]]


def purity_of(shares: Iterable[float]) -> dict[str, float | bool]:
    """How sure a pattern, or a part of one, is to hold one failure: `shares` are, for each
    position flagged as maybe hiding several, the share of the members in its largest value.
    `purity` is the smallest (1.0 with none flagged) and `impure` says it is below 1. The
    analysis and a hand split measure it so, in one place."""
    worst = min(shares, default=1.0)
    return {"purity": round(worst, 4), "impure": worst < 1.0}
