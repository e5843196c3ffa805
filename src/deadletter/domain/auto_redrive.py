"""Automatic redrive: a DLQ's policy that redrives a selection on a schedule, each dead letter
at most `max_rounds` times, and what became of its rounds.

The policy is one per DLQ. Each round is an ordinary redrive task (with the policy's canary
and rate), started by the background worker when the round is due; its redrive events carry
`auto_redrive`, so a dead letter counts its own automatic rounds in its history, and one
sent back `max_rounds` times is kept where it is, with an `auto_redrive_exhausted` event.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from deadletter.domain.model import DeadLetterFilter
from deadletter.domain.redrive import Canary

# The shortest and longest time between rounds, in seconds: a round starts a task, draws a
# canary and reads the selection, so it may not come round more often than once a minute.
MIN_INTERVAL = 60
MAX_INTERVAL = 7 * 86_400
# The most rounds a dead letter may be sent back by the policy.
MAX_ROUNDS = 100

# The history events a policy writes on a dead letter, and the key its redrives carry.
EXHAUSTED_EVENT = "auto_redrive_exhausted"
REDRIVE_KEY = "auto_redrive"


def auto_rounds(history: tuple[dict[str, Any], ...]) -> int:
    """How many times automatic redrive sent a dead letter back, read from its history."""
    return sum(1 for e in history if e.get("event") == "redriven" and e.get(REDRIVE_KEY))


def marked_since_redriven(history: tuple[dict[str, Any], ...]) -> bool:
    """Whether the dead letter was marked exhausted since it was last sent back (a mark is
    written once for each count of rounds)."""
    for e in reversed(history):
        if e.get("event") == EXHAUSTED_EVENT:
            return True
        if e.get("event") == "redriven":
            return False
    return False


class PolicyState(enum.StrEnum):
    """`active`: rounds start when due; `paused`: a round's canary paused it (or a round
    could not run), with the reason, until it is resumed; `stopped`: stopped by hand."""

    ACTIVE = "active"
    PAUSED = "paused"
    STOPPED = "stopped"


class RoundOutcome(enum.StrEnum):
    """What became of a round: its task's end, or why no task started."""

    RUNNING = "running"
    COMPLETED = "completed"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    FAILED = "failed"
    # Nothing the policy may still send back: no task was started.
    NOTHING_TO_REDRIVE = "nothing_to_redrive"
    # Another redrive task runs on the DLQ (a manual one, or the last round's): none started.
    SKIPPED = "skipped"


@dataclass(frozen=True)
class AutoRedriveSpec:
    """What a policy asks for, as given: `filter` is kept unresolved (its ages and pattern
    are read anew at each round), `canary` is a request (its size, watch and threshold)."""

    filter: DeadLetterFilter
    interval: int
    max_rounds: int
    canary: Canary | None = None
    rate: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "filter": self.filter.to_dict(),
            "interval": self.interval,
            "max_rounds": self.max_rounds,
            "canary": self.canary.to_dict() if self.canary is not None else None,
            "rate": self.rate,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AutoRedriveSpec:
        canary = data.get("canary")
        return cls(
            filter=DeadLetterFilter.from_dict(data["filter"]),
            interval=data["interval"],
            max_rounds=data["max_rounds"],
            canary=Canary.from_dict(canary) if canary else None,
            rate=data.get("rate"),
        )


@dataclass(frozen=True)
class LastRound:
    """The policy's last round: when, its task, what it found and how it ended."""

    at: float
    task_id: str | None
    outcome: RoundOutcome
    # Dead letters of the selection it may still send back, and those it kept (sent back
    # `max_rounds` times already) when it started; how many its task moved.
    eligible: int = 0
    kept: int = 0
    moved: int = 0
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "task_id": self.task_id,
            "outcome": self.outcome.value,
            "eligible": self.eligible,
            "kept": self.kept,
            "moved": self.moved,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LastRound:
        return cls(**{**data, "outcome": RoundOutcome(data["outcome"])})


@dataclass(frozen=True)
class AutoRedrive:
    """A DLQ's automatic redrive policy and its progress."""

    project: str
    dlq: str
    spec: AutoRedriveSpec
    state: PolicyState
    # When the next round is due (an active policy's; kept while paused or stopped).
    next_due: float
    created_at: float
    updated_at: float
    reason: str | None = None
    rounds: int = 0
    # Over every round: dead letters moved, and dead letters marked exhausted.
    moved: int = 0
    exhausted: int = 0
    last_round: LastRound | None = None

    @property
    def round_open(self) -> bool:
        """Whether the last round's task may still be running."""
        return self.last_round is not None and self.last_round.outcome is RoundOutcome.RUNNING

    def progress(self) -> dict[str, Any]:
        """The counters and the last round, as stored beside the state."""
        return {
            "rounds": self.rounds,
            "moved": self.moved,
            "exhausted": self.exhausted,
            "last_round": self.last_round.to_dict() if self.last_round else None,
        }
