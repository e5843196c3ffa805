"""The one schema of dead letters in the pipeline: its columns and the text of its times."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, overload

# Stable and documented in docs/pipeline.md: the data source, the export readers and the
# analysis all speak it.
SCHEMA_DDL = (
    "message_id string, source_queue string, reason string, description string, "
    "error string, dead_lettered_at timestamp, claim_count int, body string, "
    "attributes map<string,string>, enqueued_at timestamp, error_class string"
)
COLUMNS = [
    "message_id",
    "source_queue",
    "reason",
    "description",
    "error",
    "dead_lettered_at",
    "claim_count",
    "body",
    "attributes",
    "enqueued_at",
    "error_class",
]


def parse_time(value: Any) -> datetime | None:
    """ISO 8601 text, epoch seconds or a datetime -> aware UTC datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), UTC)
    text = str(value).strip()
    try:
        return datetime.fromtimestamp(float(text), UTC)
    except ValueError:
        pass
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@overload
def iso(value: datetime) -> str: ...
@overload
def iso(value: Any) -> str | None: ...
def iso(value: Any) -> str | None:
    """A time as the API writes it (UTC, milliseconds, `Z`), a naive one taken as UTC; None
    stays None and anything else is taken to be text already."""
    if value is None:
        return None
    if isinstance(value, datetime):
        at: datetime = value if value.tzinfo else value.replace(tzinfo=UTC)
        return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return str(value)
