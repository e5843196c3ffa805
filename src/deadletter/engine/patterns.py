"""Failure patterns that the analysis pipeline stores on a DLQ, a pattern's dead letters, and
the alerts a new set of patterns raises against the set it replaces.

Alerts are decided where patterns are stored (`PUT /v2/queues/{dlq}/patterns`), by comparing
the new set with the stored one in the same transaction, so any writer (a batch `analyze`,
the `--follow` loop, a script) raises them, and two writers never raise one twice. A pattern
whose id the stored set lacks is `new`; a pattern whose `rate_per_minute` reached
RATE_JUMP_FACTOR times its stored rate, and at least RATE_JUMP_MIN per minute, is a
`rate_jump`. Each alert is a notification to the DLQ's subscriptions, an engine event (the
metrics count it) and a stamp `alert: {"kind", "at"}` on the stored pattern (the console shows
it).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from functools import partial
from typing import Any

from deadletter.domain import errors
from deadletter.domain.model import MAX_PATTERNS, MAX_PATTERNS_BYTES
from deadletter.domain.patterns import Assignment, MergedBatch
from deadletter.engine.events import EngineListener
from deadletter.engine.fan_out import fan_out_events
from deadletter.engine.lookups import require_queue
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction

NEW = "new"
RATE_JUMP = "rate_jump"
KINDS = (NEW, RATE_JUMP)
# A rate jump: at least this many times the stored rate, and at least this many per minute
# (a pattern going from 1 to 3 an hour is noise, not news).
RATE_JUMP_FACTOR = 3.0
RATE_JUMP_MIN = 10.0
# Notifications one store of patterns may send; the alerts past it are stamped and counted,
# not sent (a first analysis of a large DLQ finds hundreds of "new" patterns at once).
MAX_NOTIFIED = 20
# Message ids an alert names, as examples to open.
ALERT_EXAMPLES = 5


def check(patterns: list[dict[str, Any]]) -> None:
    """InvalidInput for a rate that is not a finite number >= 0 (alerts compare rates)."""
    for p in patterns:
        rate = p.get("rate_per_minute")
        if rate is None:
            continue
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate):
            raise errors.InvalidInput(f"pattern {p.get('id')!r}: rate_per_minute must be a number")
        if rate < 0:
            raise errors.InvalidInput(f"pattern {p.get('id')!r}: rate_per_minute must be >= 0")


def alert_kind(old: dict[str, Any] | None, new: dict[str, Any]) -> str | None:
    """What storing `new` over `old` (the stored pattern of that id, or None) alerts, if
    anything."""
    if old is None:
        return NEW
    rate, before = new.get("rate_per_minute"), old.get("rate_per_minute")
    if not isinstance(rate, int | float) or not isinstance(before, int | float):
        return None
    jumped = rate >= RATE_JUMP_MIN and rate >= RATE_JUMP_FACTOR * before and rate > before
    return RATE_JUMP if jumped else None


def alert_body(dlq: str, kind: str, p: dict[str, Any], old: dict[str, Any] | None) -> bytes:
    """What an alert's notification says: the pattern's template, counts and example ids."""
    examples = p.get("sample_message_ids") or p.get("message_ids") or []
    doc = {
        "event": "pattern_alert",
        "kind": kind,
        "queue": dlq,
        "pattern": {
            "id": p["id"],
            "template": p.get("template"),
            "signature": p.get("signature"),
            "count": p.get("count"),
            "first_seen": p.get("first_seen"),
            "last_seen": p.get("last_seen"),
            "rate_per_minute": p.get("rate_per_minute"),
            "previous_rate_per_minute": None if old is None else old.get("rate_per_minute"),
            "example_message_ids": [str(i) for i in examples[:ALERT_EXAMPLES]],
        },
    }
    return json.dumps(doc).encode()


def save(
    tx: Transaction,
    pending: Pending,
    project: str,
    dlq: str,
    *,
    patterns: list[dict[str, Any]],
    now: float,
    confirmed_only: bool = False,
) -> list[tuple[str, str]]:
    """Store `patterns` in place of the DLQ's, raising their alerts; the (kind, pattern id)
    of each alert."""
    # The lock serialises stores of one DLQ: each compares with what the last one stored.
    queue = require_queue(tx, project, dlq, lock=True)
    before = {p.get("id"): p for p in tx.get_patterns(project, dlq)}
    at = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    raised: list[tuple[str, str]] = []
    bodies: list[bytes] = []
    stamped = []
    for p in patterns:
        old = before.get(p["id"])
        kind = alert_kind(old, p)
        p = {k: v for k, v in p.items() if k != "alert"}  # the server's stamp, not the writer's
        if kind is not None:
            raised.append((kind, p["id"]))
            if len(bodies) < MAX_NOTIFIED:
                bodies.append(alert_body(dlq, kind, p, old))
            p["alert"] = {"kind": kind, "at": at}
        elif old is not None and isinstance(old.get("alert"), dict):
            p["alert"] = old["alert"]
        stamped.append(p)
    tx.save_patterns(project, dlq, stamped)
    due = fan_out_events(
        tx,
        project,
        dlq,
        bodies=bodies,
        now=now,
        ttl=queue.settings.default_ttl,
        confirmed_only=confirmed_only,
    )
    stored_count = len(stamped)
    pending.calls.append(lambda lst: lst.patterns_stored(project, dlq, stored_count))
    for kind in KINDS:
        n = sum(1 for k, _ in raised if k == kind)
        if n:
            pending.calls.append(partial(_emit, project, dlq, kind, n))
    if due:
        pending.calls.append(lambda lst: lst.notifications_due(project, dlq, due))
    return raised


def _emit(project: str, dlq: str, kind: str, n: int, listener: EngineListener) -> None:
    listener.pattern_alerts(project, dlq, kind, n)


def stored(tx: Transaction, project: str, dlq: str) -> list[dict[str, Any]]:
    require_queue(tx, project, dlq)
    return tx.get_patterns(project, dlq)


def message_ids(patterns: list[dict[str, Any]], pattern_id: str) -> tuple[str, ...]:
    """The dead letters the analysis grouped under `pattern_id`, to redrive that pattern."""
    for pattern in patterns:
        if pattern.get("id") == pattern_id:
            return tuple(str(i) for i in pattern.get("message_ids") or [])
    raise errors.PatternNotFound(f"No stored pattern {pattern_id!r}.")


# Merging a micro-batch of assignments (`POST /v2/queues/{dlq}/patterns/assignments`)

# The writers whose last batch a DLQ keeps; past it the longest idle is forgotten (a replay
# of its batch then merges again, which the member sets make harmless).
MAX_WRITERS = 100
# A merged pattern's rate: its dead letters in the last RATE_MINUTES minutes, per minute.
RATE_MINUTES = 5
# The per-minute counts a merged pattern keeps, newest last, for the console's trend.
TREND_MINUTES = 60


def merge(
    tx: Transaction,
    pending: Pending,
    project: str,
    dlq: str,
    *,
    writer: str,
    batch: int,
    assigned: list[Assignment],
    now: float,
    confirmed_only: bool = False,
    limit: int = MAX_PATTERNS,
    max_bytes: int = MAX_PATTERNS_BYTES,
) -> MergedBatch:
    """Add one writer's batch to the stored patterns, unless it merged that batch already; the
    check, the read and the write under the DLQ's lock, so concurrent writers each see the
    others' batches and a replay writes nothing."""
    require_queue(tx, project, dlq, lock=True)
    batches = tx.get_pattern_batches(project, dlq)
    stored = tx.get_patterns(project, dlq)
    done = batches.get(writer)
    if done is not None and batch < done:
        raise errors.BatchBehind(
            f"Batch {batch} of writer {writer!r} is behind batch {done} it merged already: "
            "a query restarted on a new checkpoint needs a new writer id."
        )
    if done is not None and batch == done:
        return MergedBatch(False, done, len(stored), [])
    merged = merge_into(stored, assigned, now)
    if len(merged) > limit:
        raise errors.InvalidInput(f"A queue may store at most {limit} patterns.")
    if len(json.dumps(merged)) > max_bytes:
        raise errors.InvalidInput(f"Patterns may not take more than {max_bytes} bytes.")
    raised = save(
        tx, pending, project, dlq, patterns=merged, now=now, confirmed_only=confirmed_only
    )
    batches.pop(writer, None)
    batches[writer] = batch  # the newest last: the oldest is the one forgotten
    tx.save_pattern_batches(project, dlq, dict(list(batches.items())[-MAX_WRITERS:]))
    return MergedBatch(True, batch, len(merged), raised)


def merge_into(
    stored: list[dict[str, Any]], assigned: list[Assignment], now: float
) -> list[dict[str, Any]]:
    """The stored patterns with the assignments added. A pattern's members are a set of
    message ids, so a dead letter assigned twice counts once; a pattern that gained members
    has its count, first and last seen, per-minute counts and rate brought up to date."""
    patterns = {p["id"]: dict(p) for p in stored if isinstance(p.get("id"), str)}
    members = {pid: {str(m) for m in p.get("message_ids") or []} for pid, p in patterns.items()}
    touched: set[str] = set()
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
        touched.add(a.pattern_id)
        p["message_ids"] = [*(p.get("message_ids") or []), a.message_id]
        if a.dead_lettered_at is not None:
            _seen(p, a.dead_lettered_at)
    for pid in touched:
        p = patterns[pid]
        p["count"] = len(members[pid])
        p["rate_per_minute"] = _rate(p, now)
    return list(patterns.values())


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _epoch(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _seen(p: dict[str, Any], at: float) -> None:
    """First and last seen, and the dead letter counted in its minute."""
    first, last = _epoch(p.get("first_seen")), _epoch(p.get("last_seen"))
    if first is None or at < first:
        p["first_seen"] = _iso(at)
    if last is None or at > last:
        p["last_seen"] = _iso(at)
    minute = _iso(at // 60 * 60)
    counts = {str(m): int(n) for m, n in _minutes(p)}
    counts[minute] = counts.get(minute, 0) + 1
    p["minute_counts"] = [[m, counts[m]] for m in sorted(counts)[-TREND_MINUTES:]]


def _minutes(p: dict[str, Any]) -> list[tuple[Any, Any]]:
    raw = p.get("minute_counts")
    if not isinstance(raw, list):
        return []
    return [(m[0], m[1]) for m in raw if isinstance(m, list) and len(m) == 2]


def _rate(p: dict[str, Any], now: float) -> float:
    """Dead letters per minute over the RATE_MINUTES minutes up to `now`, this one included."""
    since = now // 60 * 60 - (RATE_MINUTES - 1) * 60
    recent = 0
    for minute, n in _minutes(p):
        at = _epoch(minute)
        if at is not None and since <= at <= now and isinstance(n, int):
            recent += n
    return round(recent / RATE_MINUTES, 3)
