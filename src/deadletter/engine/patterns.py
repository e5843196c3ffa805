"""Failure patterns that the analysis pipeline stores on a DLQ, and a pattern's dead letters."""

from __future__ import annotations

from typing import Any

from deadletter.domain import errors
from deadletter.engine.lookups import require_queue
from deadletter.storage.base import Transaction


def save(tx: Transaction, project: str, dlq: str, patterns: list[dict[str, Any]]) -> None:
    require_queue(tx, project, dlq)
    tx.save_patterns(project, dlq, patterns)


def stored(tx: Transaction, project: str, dlq: str) -> list[dict[str, Any]]:
    require_queue(tx, project, dlq)
    return tx.get_patterns(project, dlq)


def message_ids(patterns: list[dict[str, Any]], pattern_id: str) -> tuple[str, ...]:
    """The dead letters the analysis grouped under `pattern_id`, to redrive that pattern."""
    for pattern in patterns:
        if pattern.get("id") == pattern_id:
            return tuple(str(i) for i in pattern.get("message_ids") or [])
    raise errors.PatternNotFound(f"No stored pattern {pattern_id!r}.")
