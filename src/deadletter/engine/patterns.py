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
from deadletter.engine.events import EngineListener
from deadletter.engine.lookups import require_queue
from deadletter.engine.subscriptions import fan_out_events
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
    due = fan_out_events(tx, project, dlq, bodies, now, queue.settings.default_ttl, confirmed_only)
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
