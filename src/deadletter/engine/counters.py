"""The names of the per-queue counters the engine keeps: written by operations, read by stats."""

from __future__ import annotations

from deadletter.domain.provenance import Reason

ACKNOWLEDGED = "acknowledged"
EXPIRED_DROPPED = "expired_dropped"
# Of those, the dead letters (a DLQ's messages that came from a source queue): kept apart, as a
# dead letter that expires is the last of a message that failed.
DEAD_LETTERS_EXPIRED = "dead_letters_expired"
DEAD_LETTERED_PREFIX = "dead_lettered."
DROPPED_PREFIX = "dropped."
DLQ_FULL_PREFIX = "dlq_full."


def dead_lettered(reason: Reason) -> str:
    return f"{DEAD_LETTERED_PREFIX}{reason.value}"


def dropped(reason: Reason) -> str:
    """Past the limit of `reason` but not eligible for the DLQ, so dropped."""
    return f"{DROPPED_PREFIX}{reason.value}"


def dlq_full(reason: Reason) -> str:
    """Due for the DLQ for `reason`, refused by its bound, so kept in the source queue."""
    return f"{DLQ_FULL_PREFIX}{reason.value}"
