"""Pattern assignments merged into a DLQ's stored patterns: what the streaming sink
(`df.writeStream.format("deadletter")`) writes, one micro-batch at a time.

An assignment says that a dead letter belongs to a pattern (`message_id`, `pattern_id`, and
optionally the pattern's `template` and `signature` and the dead letter's `dead_lettered_at`).
A micro-batch is merged in one read and one `PUT /v2/queues/{dlq}/patterns`, which stamps
every stored pattern with the sink's name and the batch id. Writing is idempotent twice over:
a batch whose id is not above the stamp is skipped whole (Spark replays the last batch after
a restart when its commit was not recorded), and a pattern's members are a set of message
ids, so a dead letter assigned twice (the stamp lost to a batch `analyze` in between) is
counted once. One sink per DLQ: two writers merging at once could each miss the other's
batch (the read and the write are two requests).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from deadletter.pipeline.columns import iso, parse_time

# The columns an assignment needs, and those it may carry.
REQUIRED = ("message_id", "pattern_id")
OPTIONAL = ("template", "signature", "dead_lettered_at")
# The sink's stamp on each stored pattern.
STAMP = "sink"
DEFAULT_SINK = "deadletter"
# The trend the console draws: dead letters per minute, the newest MINUTES kept.
MINUTES = 60


@dataclass(frozen=True)
class Assignment:
    message_id: str
    pattern_id: str
    template: str | None = None
    signature: str | None = None
    dead_lettered_at: str | None = None  # ISO 8601, as the API writes times


def check_columns(columns: Sequence[str]) -> None:
    """ValueError naming what a stream of assignments lacks."""
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise ValueError(
            f"the deadletter sink writes pattern assignments: the stream needs column(s) "
            f"{missing} (and may have {list(OPTIONAL)})"
        )


def of_row(row: dict[str, Any]) -> Assignment | None:
    """A row of the stream -> an assignment; None for a row without both ids."""
    message_id, pattern_id = row.get("message_id"), row.get("pattern_id")
    if not message_id or not pattern_id:
        return None
    at = parse_time(row.get("dead_lettered_at"))
    return Assignment(
        str(message_id),
        str(pattern_id),
        row.get("template"),
        row.get("signature"),
        iso(at) if at is not None else None,
    )


def last_batch(stored: Iterable[dict[str, Any]], sink: str) -> int | None:
    """The last batch of `sink` merged into the stored patterns, if any."""
    batches = [
        p[STAMP]["batch"]
        for p in stored
        if isinstance(p.get(STAMP), dict) and p[STAMP].get("name") == sink
    ]
    return max(batches) if batches else None


def merge(
    stored: list[dict[str, Any]], assigned: Iterable[Assignment], sink: str, batch: int
) -> list[dict[str, Any]] | None:
    """The stored patterns with a batch's assignments added; None when the batch was merged
    already (its id is not above the sink's stamp)."""
    done = last_batch(stored, sink)
    if done is not None and batch <= done:
        return None
    patterns = {p["id"]: dict(p) for p in stored if isinstance(p.get("id"), str)}
    members = {pid: {str(m) for m in p.get("message_ids") or []} for pid, p in patterns.items()}
    for a in assigned:
        p = patterns.setdefault(a.pattern_id, {"id": a.pattern_id, "message_ids": []})
        have = members.setdefault(a.pattern_id, set())
        if a.template and not p.get("template"):
            p["template"] = a.template
        if a.signature and not p.get("signature"):
            p["signature"] = a.signature
        if a.message_id in have:
            continue
        have.add(a.message_id)
        p["message_ids"] = [*(p.get("message_ids") or []), a.message_id]
        if a.dead_lettered_at is not None:
            _seen(p, a.dead_lettered_at)
    out = []
    for pid, p in patterns.items():
        p["count"] = len(members[pid])
        p[STAMP] = {"name": sink, "batch": batch}
        out.append(p)
    return out


def _seen(p: dict[str, Any], at: str) -> None:
    """First and last seen, and the dead letter counted in its minute."""
    first, last = parse_time(p.get("first_seen")), parse_time(p.get("last_seen"))
    when = parse_time(at)
    assert when is not None
    if first is None or when < first:
        p["first_seen"] = at
    if last is None or when > last:
        p["last_seen"] = at
    minute = iso(when.replace(second=0, microsecond=0))
    counts = {str(m): int(n) for m, n in p.get("minute_counts") or []}
    counts[minute] = counts.get(minute, 0) + 1
    p["minute_counts"] = [[m, counts[m]] for m in sorted(counts)[-MINUTES:]]
