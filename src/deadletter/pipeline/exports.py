"""The export in Parquet: SCHEMA's columns as Arrow types, the writer `dlq export --format
parquet` streams the API's pages into, and the reader the in-process engine takes it with.

A Parquet export holds each dead letter as the analysis reads the same dead letter from a
JSON-lines export (a nested body as its JSON text, an attribute object as its value, times as
UTC instants), so that both formats, and both engines, give the same patterns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deadletter.pipeline.columns import COLUMNS, parse_time

_TEXT = pa.string()
_TIME = pa.timestamp("us", tz="UTC")
# SCHEMA_DDL's types in Arrow, in COLUMNS's order.
ARROW_TYPES: dict[str, pa.DataType] = {
    "message_id": _TEXT,
    "source_queue": _TEXT,
    "reason": _TEXT,
    "description": _TEXT,
    "error": _TEXT,
    "dead_lettered_at": _TIME,
    "claim_count": pa.int32(),
    "body": _TEXT,
    "attributes": pa.map_(_TEXT, _TEXT),
    "enqueued_at": _TIME,
    "error_class": _TEXT,
}
ARROW_SCHEMA = pa.schema([(name, ARROW_TYPES[name]) for name in COLUMNS])
# Pages are gathered into row groups of this many dead letters: an API page (1,000 at most)
# per row group would make a million dead letters a thousand groups, each read on its own.
ROW_GROUP = 64 * 1024
_INT32 = 2**31


def _text(value: Any) -> str | None:
    """A text column as Spark's JSON reader reads it into a string: JSON text of anything else."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _time(value: Any) -> datetime | None:
    """A time as the analysis reads it (to_timestamp: null when it is not one)."""
    try:
        return parse_time(value)
    except (ValueError, OverflowError, OSError):
        return None


def _count(value: Any) -> int | None:
    return value if type(value) is int and -_INT32 <= value < _INT32 else None


def attribute_value(value: Any) -> str | None:
    """An attribute as schema.to_schema reads it from a JSON-lines export: a `{"type",
    "value"}` object's value (its JSON text when it is not text), the JSON text of anything
    else but text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and value.get("value") is not None:
        inner = value["value"]
        return inner if isinstance(inner, str) else json.dumps(inner, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False)


def record_batch(records: Iterable[dict[str, Any]]) -> pa.RecordBatch:
    """Export records (client.records.export_record) as one batch in ARROW_SCHEMA."""
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for r in records:
        for name in ("message_id", "source_queue", "reason", "description", "error"):
            columns[name].append(_text(r.get(name)))
        columns["error_class"].append(_text(r.get("error_class")))
        columns["dead_lettered_at"].append(_time(r.get("dead_lettered_at")))
        columns["enqueued_at"].append(_time(r.get("enqueued_at")))
        columns["claim_count"].append(_count(r.get("claim_count")))
        columns["body"].append(_text(r.get("body")))
        attributes = r.get("attributes")
        columns["attributes"].append(
            None
            if not isinstance(attributes, dict)
            else [(str(k), attribute_value(v)) for k, v in attributes.items()]
        )
    return pa.RecordBatch.from_pydict(columns, schema=ARROW_SCHEMA)


def rows_batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """Rows in SCHEMA's column order (messages.row_of) as one batch in ARROW_SCHEMA, the
    Arrow schema Spark expects of its data source in a UTC session."""
    columns = [list(c) for c in zip(*rows, strict=True)] or [[] for _ in COLUMNS]
    at = COLUMNS.index("attributes")
    columns[at] = [None if a is None else list(a.items()) for a in columns[at]]
    return pa.RecordBatch.from_arrays(
        [pa.array(c, ARROW_TYPES[name]) for name, c in zip(COLUMNS, columns, strict=True)],
        schema=ARROW_SCHEMA,
    )


def write_parquet(pages: Iterable[list[dict[str, Any]]], out: Path) -> int:
    """Write the export records of `pages` as they arrive, a row group every ROW_GROUP
    records (memory holds one group, not the export); the number written."""
    written = 0
    held: list[dict[str, Any]] = []
    with pq.ParquetWriter(out, ARROW_SCHEMA) as writer:
        for page in pages:
            held += page
            if len(held) >= ROW_GROUP:
                writer.write_batch(record_batch(held), row_group_size=len(held))
                written += len(held)
                held = []
        if held or not written:
            writer.write_batch(record_batch(held), row_group_size=max(1, len(held)))
            written += len(held)
    return written


class NotExport(ValueError):
    """A Parquet file whose columns are not the export's types: Spark's reader coerces it."""


def is_parquet(path: Path) -> bool:
    """A Parquet file or a folder of them (Spark's output), by name or by its first bytes."""
    if path.is_dir():
        return True
    if path.suffix == ".parquet":
        return True
    try:
        with path.open("rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def parquet_rows(path: Path) -> int:
    """The number of dead letters in a Parquet export (its footer alone is read)."""
    parts = sorted(p for p in path.iterdir() if p.suffix == ".parquet") if path.is_dir() else [path]
    return sum(pq.read_metadata(p).num_rows for p in parts)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every dead letter of a Parquet export as a row in SCHEMA (times naive UTC, as Spark
    hands them back in a UTC session); NotExport when a column is of another type."""
    table = pq.read_table(path)
    columns = {}
    for name in COLUMNS:
        if name not in table.column_names:
            columns[name] = pa.nulls(table.num_rows, ARROW_TYPES[name])
            continue
        column = table.column(name)
        wanted = ARROW_TYPES[name]
        if pa.types.is_timestamp(wanted) and pa.types.is_timestamp(column.type):
            if column.type.tz is None:
                raise NotExport(f"{name} is a time without a zone")
        elif column.type != wanted:
            raise NotExport(f"{name} is {column.type}, not {wanted}")
        columns[name] = column
    for name in ("dead_lettered_at", "enqueued_at"):
        columns[name] = columns[name].cast(pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us"))
    rows: list[dict[str, Any]] = pa.table(columns).to_pylist()
    for row in rows:
        if row["attributes"] is not None:
            row["attributes"] = dict(row["attributes"])
    return rows
