"""One line of a JSON-lines export read as a row in SCHEMA, exactly as Spark's JSON reader and
`schema.to_schema` read it, or `NotLocal`: the reader of the in-process engine's rows, and of
the lines its block reading (reader.py) is not sure of."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import msgspec

from deadletter.pipeline.columns import COLUMNS

_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})?")
_TEXT_COLUMNS = ("message_id", "source_queue", "reason", "description", "error", "error_class")
_INT32 = 2**31
_DECODE = msgspec.json.Decoder().decode
_ENCODE = msgspec.json.Encoder().encode
_CONTROL = re.compile(r"[\x00-\x1f]")
# The ways `deadletter dlq export` and the corpus generator write a nested body.
_DUMPS = [
    {"separators": seps, "ensure_ascii": ascii_only}
    for seps in ((", ", ": "), (",", ":"))
    for ascii_only in (False, True)
]


_COMPACT_FIRST = sorted(_DUMPS, key=lambda o: o["separators"] != (",", ":"))


def _decoded(line: str) -> Any:
    """json.loads's answer, by msgspec's faster decoder where it reads the line (it refuses
    what standard JSON refuses, NaN say, which json.loads then reads as before)."""
    try:
        return _DECODE(line)
    except msgspec.DecodeError:
        return json.loads(line)


class NotLocal(ValueError):
    """The export holds a line that only Spark's reader is sure to read as Spark does."""


def _time(value: Any) -> datetime | None:
    """A time as Spark's to_timestamp reads it in a UTC session: naive, UTC, microseconds."""
    if value is None:
        return None
    if not isinstance(value, str) or not _TIME.fullmatch(value):
        raise NotLocal(f"a time Spark may read otherwise: {value!r}")
    # The expression above is ISO 8601 only: parse_time's reading as epoch seconds is moot.
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        return parsed
    return parsed.astimezone(UTC).replace(tzinfo=None)


def _body(value: Any, line: str) -> str | None:
    """The body's text; a nested JSON body is the text of the line itself, as Spark keeps it."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        # The export's own separators first: most bodies are found on the first try.
        compact = '"body":{' in line or '"body":[' in line
        if compact:
            # msgspec writes as the export does, much faster; the text is the line's own
            # when it is found there.
            text = _ENCODE(value).decode()
            if f'"body":{text}' in line:
                return text
        for options in _COMPACT_FIRST if compact else _DUMPS:
            text = json.dumps(value, **options)  # type: ignore[arg-type]
            if f'"body": {text}' in line or f'"body":{text}' in line:
                return text
    raise NotLocal("a body whose text Spark may keep otherwise")


def _attribute(value: Any) -> str | None:
    """An attribute's value as to_schema reads it: a `{"type","value"}` object's value."""
    if value is None:
        return None
    if isinstance(value, str) and not value.startswith(("{", "[")):
        return value
    if isinstance(value, dict) and set(value) <= {"type", "value"}:
        found = value.get("value")
        if isinstance(found, str):
            return found
    raise NotLocal(f"an attribute value Spark may read otherwise: {value!r}")


def row_of_line(line: str) -> dict[str, Any]:
    """One export line as a row in SCHEMA, or NotLocal."""
    try:
        record = _decoded(line)
    except ValueError as exc:
        raise NotLocal("a line that is not JSON") from exc
    if not isinstance(record, dict):
        raise NotLocal("a line that is not a JSON object")
    row: dict[str, Any] = {}
    for name in _TEXT_COLUMNS:
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            raise NotLocal(f"a {name} that is not text")
        row[name] = value
    mid = row["message_id"]
    if mid is None or _CONTROL.search(mid):
        raise NotLocal("a message id that is missing or holds control characters")
    count = record.get("claim_count")
    if count is not None and (type(count) is not int or not -_INT32 <= count < _INT32):
        raise NotLocal(f"a claim count Spark reads otherwise: {count!r}")
    row["claim_count"] = count
    row["dead_lettered_at"] = _time(record.get("dead_lettered_at"))
    row["enqueued_at"] = _time(record.get("enqueued_at"))
    row["body"] = _body(record.get("body"), line)
    attributes = record.get("attributes")
    if attributes is not None and not isinstance(attributes, dict):
        raise NotLocal("attributes that are not an object")
    row["attributes"] = (
        None if attributes is None else {k: _attribute(v) for k, v in attributes.items()}
    )
    return {name: row[name] for name in COLUMNS}
