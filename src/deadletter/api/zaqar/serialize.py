"""The JSON shapes of the native API: messages, queues, claims, redrive tasks, next links."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

import msgspec

from deadletter.api.json_response import dumps
from deadletter.domain.model import Message
from deadletter.domain.provenance import death_counts
from deadletter.domain.redrive import Canary, RedriveTask
from deadletter.domain.tags import DEFAULT_DONE_AT

TIME_KEYS = frozenset(
    {"at", "dead_lettered_at", "original_enqueued_at", "first_at", "last_at", "keep_until"}
)


@lru_cache(maxsize=1024)  # the messages of one send share their time, as answers list them
def iso(ts: float) -> str:
    """ISO 8601 UTC with milliseconds, like 2026-11-22T15:04:05.123Z."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def encode_body(body: Any) -> bytes:
    """A message body as it is stored: compact JSON, as the faces write their answers."""
    return dumps(body)


_decode = msgspec.json.Decoder().decode


def decode_body(raw: bytes) -> Any:
    """The parsed JSON when the bytes are JSON (Zaqar's own messages), else the text: also
    for text that only Python's `json` would read as a number (`NaN`, `1e400`), which no
    answer could carry."""
    try:
        return _decode(raw)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return raw.decode("utf-8", errors="replace")


def message_href(queue: str, message_id: str, claim_id: str | None = None) -> str:
    href = f"/v2/queues/{queue}/messages/{message_id}"
    return f"{href}?claim_id={claim_id}" if claim_id else href


def message_brief(m: Message | None, now: float) -> dict[str, Any] | None:
    """A queue's oldest or newest message in its stats."""
    if m is None:
        return None
    return {
        "id": m.id,
        "href": message_href(m.queue, m.id),
        "age": max(0, int(now - m.enqueued_at)),
        "created": iso(m.enqueued_at),
        # When it leaves the queue unless consumed: on a DLQ, when its oldest dead letter is
        # dropped.
        "expires": iso(m.expires_at),
    }


def next_link(path: str, params: dict[str, Any]) -> list[dict[str, str]]:
    clean = {k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()}
    return [{"rel": "next", "href": f"{path}?{urlencode(clean)}"}]


def _times(event: dict[str, Any]) -> dict[str, Any]:
    return {
        k: iso(v) if k in TIME_KEYS and isinstance(v, int | float) else v for k, v in event.items()
    }


def message_json(
    m: Message, now: float, claim_id: str | None = None, extended: bool = True
) -> dict[str, Any]:
    """Zaqar's fields; with `extended`, also attributes, enqueued_at, provenance, history."""
    out: dict[str, Any] = {
        "id": m.id,
        "href": message_href(m.queue, m.id, claim_id),
        "ttl": m.ttl(),
        "age": max(0, int(now - m.enqueued_at)),
        "body": decode_body(m.body),
        "claim_count": m.claim_count,
    }
    if m.is_claimed(now):
        out["claim_id"] = m.claim_id
    if not extended:
        return out
    out["enqueued_at"] = iso(m.enqueued_at)
    # Hidden without a claim (a delay, a retry backoff): when it is visible again. A message
    # the untagged consumers are done with waits for the tags, never to be visible to them.
    if not m.is_claimed(now) and now < m.visible_at < DEFAULT_DONE_AT:
        out["visible_at"] = iso(m.visible_at)
    if m.attributes:
        out["attributes"] = {k: a.to_dict() for k, a in m.attributes.items()}
    if m.provenance is not None:
        out["provenance"] = {
            **_times(m.provenance.to_dict()),
            "deaths": [_times(d) for d in death_counts(m.history)],
        }
    if m.history:
        out["history"] = [_times(e) for e in m.history]
    if m.group_id is not None:
        out["group_id"] = m.group_id
    if m.deduplication_id is not None:
        out["deduplication_id"] = m.deduplication_id
    return out


def task_href(task: RedriveTask) -> str:
    return f"/v2/queues/{task.dlq}/redrives/{task.id}"


def task_json(task: RedriveTask, pattern_id: str | None = None) -> dict[str, Any]:
    f = task.filter
    return {
        "id": task.id,
        "href": task_href(task),
        "dlq": task.dlq,
        "destination": task.destination,
        "filter": {
            "source_queue": f.source_queue,
            **({"source_tag": f.source_tag} if f.source_tag is not None else {}),
            "reason": f.reason.value if f.reason else None,
            "since": iso(f.since) if f.since is not None else None,
            "until": iso(f.until) if f.until is not None else None,
            "message_ids": list(f.message_ids) if f.message_ids is not None else None,
            # Kept with a canary, which names it in its verdict.
            "pattern_id": pattern_id or (task.canary.pattern_id if task.canary else None),
            # The saved filter the task was started with (a failure group by name).
            **({"filter": f.saved} if f.saved is not None else {}),
        },
        "rate": task.rate,
        "status": task.status.value,
        "moved": task.moved,
        "to_move": task.to_move,
        "started_at": iso(task.started_at),
        "updated_at": iso(task.updated_at),
        "failure_reason": task.failure_reason,
        "skipped": task.skipped,
        "skipped_messages": [{"id": mid, "reason": r.value} for mid, r in task.skipped_messages],
        "gone": task.gone,
        **({"canary": canary_json(task.canary)} if task.canary is not None else {}),
        # A round of the DLQ's automatic redrive (its filter leaves out the exhausted).
        **({"auto_redrive": True} if f.auto_rounds_below is not None else {}),
    }


def canary_json(c: Canary) -> dict[str, Any]:
    """What a task's canary asked for and what became of it."""
    return {
        "size": c.size,
        "requested": f"{c.percent:g}%" if c.percent is not None else c.count,
        "watch": c.watch,
        "max_redeath": c.max_redeath,
        "sample": c.sample,
        "sample_ids": list(c.sample_ids),
        "watch_until": iso(c.watch_until) if c.watch_until is not None else None,
        "redeaths": c.redeaths,
        "decision": c.decision.value if c.decision is not None else None,
        "decided_at": iso(c.decided_at) if c.decided_at is not None else None,
        "reason": c.reason,
        "resumed_at": iso(c.resumed_at) if c.resumed_at is not None else None,
        # What the sample was drawn across (engine/canary.py) and how much of it it covers.
        "seed": c.seed,
        "force": c.force,
        "drawn_by": c.drawn_by,
        "kinds": c.kinds,
        "kinds_covered": c.kinds_covered,
        "combinations": c.combinations,
        "combinations_covered": c.combinations_covered,
        "coverage": c.coverage,
    }
