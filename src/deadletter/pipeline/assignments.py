"""Pattern assignments merged into a DLQ's stored patterns: what the streaming sink
(`df.writeStream.format("deadletter")`) writes, one micro-batch at a time.

An assignment says that a dead letter belongs to a pattern (`message_id`, `pattern_id`, and
optionally the pattern's `template` and `signature` and the dead letter's `dead_lettered_at`).
A micro-batch is one `POST /v2/queues/{dlq}/patterns/assignments`, which the server merges in
one transaction, once per (writer id, batch id): any number of writers may share a DLQ, and
a batch Spark replays after a restart (its commit not recorded) writes nothing.

The writer id is the query's: the id Spark keeps in the checkpoint's `metadata` file, read
from the `checkpointLocation` option, so a query restarted on its checkpoint keeps it and a
query on a fresh checkpoint has a new one. Where that file cannot be read (a checkpoint on a
remote file system, or one set through `spark.sql.streaming.checkpointLocation`), the id is
the option `sink_name`, else the checkpoint's path, else "deadletter"; a query on a fresh
checkpoint under an old id then sends batch ids below the ones merged, which the server
refuses (409 "Batch behind") and the query fails saying so, instead of skipping them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from deadletter.pipeline.columns import iso, parse_time

# The columns an assignment needs, and those it may carry.
REQUIRED = ("message_id", "pattern_id")
OPTIONAL = ("template", "signature", "dead_lettered_at")
DEFAULT_SINK = "deadletter"
# What one request may carry (the server's cap on a batch).
MAX_ASSIGNMENTS = 10_000


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


def as_json(assigned: Sequence[Assignment]) -> list[dict[str, Any]]:
    """The assignments as the request carries them, the empty fields left out."""
    return [{k: v for k, v in asdict(a).items() if v is not None} for a in assigned]


def writer_id(options: Mapping[str, str]) -> str:
    """Who the server stamps a merged batch with (see the module docstring)."""
    opts = {k.lower(): v for k, v in options.items()}
    location = opts.get("checkpointlocation")
    query = query_id(location) if location else None
    if query is not None:
        return f"query:{query}"
    if opts.get("sink_name"):
        return opts["sink_name"]
    if location:
        return "checkpoint:" + hashlib.sha256(location.encode()).hexdigest()[:32]
    return DEFAULT_SINK


def query_id(location: str) -> str | None:
    """The id a streaming query keeps in its checkpoint, if the checkpoint is a local folder
    that holds it (Spark writes it when the query starts, before the sink is made)."""
    parsed = urlparse(location)
    if parsed.scheme not in ("", "file"):
        return None
    path = Path(parsed.path if parsed.scheme else location) / "metadata"
    try:
        doc = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None
    value = doc.get("id") if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value else None
