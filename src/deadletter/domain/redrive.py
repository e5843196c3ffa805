"""Redrive tasks: what a task moves and how far it got, the canary that may watch it, and
the edits it applies to what it moves."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from deadletter.domain.model import DeadLetterFilter

# A redrive task keeps at most this many skipped message ids; its `skipped` count is exact.
MAX_SKIPPED_RECORDED = 1000


class SkipReason(enum.StrEnum):
    """Why a redrive left a dead letter where it is."""

    NO_SOURCE = "no_source"
    SOURCE_DELETED = "source_deleted"
    SOURCE_IS_DLQ = "source_is_dlq"
    # The queue it goes back to is at its bound: a redrive never pushes a live message out,
    # whatever the queue's overflow policy.
    QUEUE_FULL = "queue_full"
    # The task's transform does not apply to it (a conflict, or a result too large).
    TRANSFORM_REFUSED = "transform_refused"


class TaskStatus(enum.StrEnum):
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    CANCELLING = "CANCELLING"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
    # Stopped by its canary: too many of the sample died again. It moves nothing more; the
    # rest stays in the DLQ for a new redrive once the cause is fixed.
    PAUSED = "PAUSED"


# A canary keeps at most this many of its sample's ids; its `sample` count is exact.
MAX_CANARY_IDS_RECORDED = 1000
# The most dead letters one canary samples: the drawn ids are kept with the task.
MAX_CANARY_SIZE = 10_000
MAX_CANARY_WATCH = 86_400
DEFAULT_CANARY_WATCH = 60.0


class CanaryDecision(enum.StrEnum):
    CONTINUED = "continued"
    PAUSED = "paused"


@dataclass(frozen=True)
class Canary:
    """A redrive that checks itself: it moves a sample first (`count` dead letters, or
    `percent` of those it selects), watches `watch` seconds whether they come back dead into
    its DLQ, then goes on with the rest, or pauses when more than `max_redeath` percent of the
    sample died again. The fields after `max_redeath` are its progress and outcome."""

    count: int | None = None
    percent: float | None = None
    watch: float = DEFAULT_CANARY_WATCH
    max_redeath: float = 0.0
    # The failure pattern the task's dead letters were selected by, named in its verdict.
    pattern_id: str | None = None
    # The draw's seed (None: one is derived from the task's id, and kept); `force` starts a
    # canary over a pattern flagged impure, which is refused otherwise.
    seed: int | None = None
    force: bool = False
    # How many the sample takes (fixed when the task starts), how many of it moved so far and
    # (the first MAX_CANARY_IDS_RECORDED of) their ids as dead letters, before the move.
    size: int = 0
    sample: int = 0
    sample_ids: tuple[str, ...] = ()
    # The sample drawn when the task starts (engine/canary.py), walked in the DLQ's order up
    # to `plan_seq`; what it was drawn across and how much of it it covers.
    plan: tuple[str, ...] = ()
    plan_seq: int = 0
    drawn_by: str | None = None
    kinds: int = 0
    kinds_covered: int = 0
    combinations: int = 0
    combinations_covered: int = 0
    coverage: str | None = None
    # Set when the whole sample has moved: the watch ends then.
    watch_until: float | None = None
    # Sample messages seen back in the DLQ, and the DLQ's numbering read so far for them.
    redeaths: int = 0
    seen_seq: int = 0
    decision: CanaryDecision | None = None
    decided_at: float | None = None
    reason: str | None = None
    # When a paused task was resumed by hand: the rest then moved despite the verdict.
    resumed_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "percent": self.percent,
            "watch": self.watch,
            "max_redeath": self.max_redeath,
            "pattern_id": self.pattern_id,
            "seed": self.seed,
            "force": self.force,
            "size": self.size,
            "sample": self.sample,
            "sample_ids": list(self.sample_ids),
            "plan": list(self.plan),
            "plan_seq": self.plan_seq,
            "drawn_by": self.drawn_by,
            "kinds": self.kinds,
            "kinds_covered": self.kinds_covered,
            "combinations": self.combinations,
            "combinations_covered": self.combinations_covered,
            "coverage": self.coverage,
            "watch_until": self.watch_until,
            "redeaths": self.redeaths,
            "seen_seq": self.seen_seq,
            "decision": self.decision.value if self.decision else None,
            "decided_at": self.decided_at,
            "reason": self.reason,
            "resumed_at": self.resumed_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Canary:
        decision = data.get("decision")
        return cls(
            **{k: v for k, v in data.items() if k not in ("sample_ids", "plan", "decision")},
            sample_ids=tuple(data.get("sample_ids", ())),
            plan=tuple(data.get("plan", ())),
            decision=CanaryDecision(decision) if decision else None,
        )


class PatchKind(enum.StrEnum):
    """How an edit of a dead letter is written: JSON Merge Patch (RFC 7396) or JSON Patch
    (RFC 6902), both over the document `{"body": ..., "attributes": {...}}`."""

    MERGE = "merge"
    JSON = "json"


@dataclass(frozen=True)
class MessagePatch:
    """An edit of a dead letter's body or attributes, as the client wrote it."""

    kind: PatchKind
    document: Any
    # Who asked for it ({"project", "credential"}), where it is kept to be applied later (a
    # redrive's transform); each edit's history event names them.
    by: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind.value,
            "document": self.document,
            **({"by": self.by} if self.by is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MessagePatch:
        return cls(PatchKind(data["type"]), data["document"], data.get("by"))


@dataclass(frozen=True)
class RedriveTask:
    id: str
    project: str
    dlq: str
    destination: str | None
    filter: DeadLetterFilter
    rate: float | None
    status: TaskStatus
    moved: int
    to_move: int
    max_seq: int
    started_at: float
    updated_at: float
    failure_reason: str | None = None
    # Dead letters the task left in the DLQ, and (the first MAX_SKIPPED_RECORDED of) their
    # ids with the reason; a task never fails because of single messages.
    skipped: int = 0
    skipped_messages: tuple[tuple[str, SkipReason], ...] = ()
    # The highest sequence number the task has examined: it goes on after it.
    cursor_seq: int = 0
    canary: Canary | None = None
    # Applied to each dead letter as it moves, kept in its history as an edit.
    transform: MessagePatch | None = None

    @property
    def gone(self) -> int:
        """Of a completed task's selection, those it neither moved nor skipped: they left the
        DLQ by another road while it ran (archived, discarded, purged, expired), or were
        claimed from it when the task reached them (those stay). So moved + skipped + gone
        == to_move once it completed."""
        if self.status is not TaskStatus.COMPLETED:
            return 0
        return max(self.to_move - self.moved - self.skipped, 0)
