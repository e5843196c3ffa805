"""Engine events: metrics, logs and long-poll wake-ups listen here, not inside operations."""

from __future__ import annotations


class EngineListener:
    """Override what you need; every hook runs after its transaction committed."""

    def messages_available(self, project: str, queue: str) -> None:
        """Messages became visible in `queue`: sent, released, redriven or dead-lettered into it."""

    def sent(self, project: str, queue: str, count: int) -> None:
        """`count` messages were sent to `queue`."""

    def notifications_due(self, project: str, queue: str, count: int) -> None:
        """`count` notifications to `queue`'s subscribers were stored, due now."""

    def claimed(self, project: str, queue: str, count: int) -> None:
        """`count` messages were handed to a consumer."""

    def acknowledged(self, project: str, queue: str, count: int) -> None:
        """`count` messages were deleted by their consumer."""

    def dead_lettered(self, project: str, source: str, dlq: str, reason: str, count: int) -> None:
        """`count` messages moved from `source` to `dlq` for `reason`."""

    def expired(self, project: str, queue: str, count: int) -> None:
        """`count` messages expired and were dropped."""

    def dead_letters_expired(self, project: str, dlq: str, sources: list[str], count: int) -> None:
        """`count` dead letters of `dlq` (from the source queues `sources`) expired and were
        dropped; `expired` is told of them too."""

    def dropped(self, project: str, queue: str, reason: str, count: int) -> None:
        """`count` messages of `queue` went past the limit of `reason` (max_claims, expired)
        but were not eligible for the DLQ, or were pushed out of a bounded queue or DLQ with
        no DLQ of its own (maxlen), so were dropped."""

    def redrive_due(self, project: str, dlq: str, task_id: str) -> None:
        """A redrive task of `dlq` has a step to take now: it was started, resumed after its
        canary paused it, or asked to stop (the worker of this process steps it at once)."""

    def redriven(self, project: str, dlq: str, task_id: str, count: int) -> None:
        """A redrive task moved `count` messages out of `dlq`."""

    def archived(self, project: str, dlq: str, count: int) -> None:
        """`count` dead letters of `dlq` were archived out of its active view."""

    def restored(self, project: str, dlq: str, count: int) -> None:
        """`count` archived dead letters were restored into `dlq` (`messages_available` is
        told as well)."""

    def discarded(self, project: str, dlq: str, count: int) -> None:
        """`count` dead letters of `dlq` were discarded for good, with a record in its
        discard log."""

    def tag_delivery(self, project: str, queue: str, tag: str, event: str, count: int) -> None:
        """`count` messages of `queue` were `event` (claimed, acknowledged, dead_lettered) by
        consumer tag `tag`; the queue-wide hooks above are called as well."""

    def patterns_stored(self, project: str, dlq: str, count: int) -> None:
        """`count` failure patterns were stored for `dlq`, in place of the ones before."""

    def pattern_alerts(self, project: str, dlq: str, kind: str, count: int) -> None:
        """Storing `dlq`'s patterns raised `count` alerts of `kind` (new, rate_jump)."""
