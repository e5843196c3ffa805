"""A JSON-lines export read block by block into columns for the in-process engine: each block
decoded in one call (msgspec's typed JSON-lines decoder), its checks made over whole columns
(message ids, counts, times with Arrow's parser), its bodies' shapes found with RE2 over the
column. Memory holds one block at a time.

A block the fast reading is not sure to read as `local.row_of_line` does (a line that does not
start with `{` and end with `}`, a carriage return, a body whose text is not the export's own
compact JSON, a value of another type) is read line by line by `local.row_of_line` itself,
which reads it or raises `NotLocal` with the line's number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from deadletter.pipeline.body_keys import Slow, body_style, paths_of, shape_keys
from deadletter.pipeline.masking import DIGIT_CLASSES

__all__ = ["BLOCK_BYTES", "Block", "Slow", "blocks", "paths_of", "read_block", "text_lines"]

BLOCK_BYTES = 8 * 1024 * 1024
_INT32 = 2**31
_NULL = msgspec.Raw(b"null")
_CONTROL = re.compile(r"[\x00-\x1f]")


# Without the cyclic garbage collector's tracking (msgspec's gc=False): a block decodes into
# hundreds of thousands of these, and none holds a cycle.
class _Attribute(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    value: str
    type: Any = None


class _Line(msgspec.Struct, gc=False):
    message_id: str | None = None
    source_queue: str | None = None
    reason: str | None = None
    description: str | None = None
    error: str | None = None
    error_class: str | None = None
    claim_count: int | None = None
    dead_lettered_at: str | None = None
    enqueued_at: str | None = None
    body: msgspec.Raw = _NULL
    attributes: dict[str, str | _Attribute | None] | None = None


_LINES = msgspec.json.Decoder(_Line).decode_lines

# `local._TIME` as RE2 reads it, stricter where Arrow's parser and `datetime.fromisoformat`
# might disagree (a 60th second, an offset past 23:59): such a time goes the slow way.
_TIME_RE2 = (
    r"^\d{4}-\d{2}-\d{2}[T ](?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,6})?"
    r"(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)?$"
)
_OFFSET = r"[+-]\d{2}:\d{2}$"
_TIMESTAMP = pa.timestamp("us")


@dataclass
class Block:
    """The columns of one block of dead letters, in input order."""

    first_line: int
    message_ids: list[str]
    source_queues: list[str | None]
    reasons: list[str | None]
    errors: list[str | None]
    descriptions: list[str | None]
    error_classes: list[str | None]
    # The same three texts with digits 2-9 as 1 (masking.as_digit_class).
    digit_classes: tuple[pa.Array, pa.Array, pa.Array]
    dead_lettered_at: pa.Array  # timestamp[us], naive UTC
    # Each dead letter's number in `shape_keys`: a key for which every body with it has the
    # same key paths, ("json", text with values blanked) or ("shape", shape.shape_of(body)).
    shapes: pa.Array
    shape_keys: list[tuple[str, str | None]]
    # Every attribute that is not null: its dead letter's place in the block, name, value.
    attributes: tuple[list[int], list[str], list[str]]
    line_numbers: list[int]  # each dead letter's line in the file, from 1


def blocks(path: Path, size: int = BLOCK_BYTES) -> Iterator[tuple[int, int, bytes]]:
    """(number of the block's first line, its offset in the file, whole lines) of the file,
    about `size` bytes each."""
    number = 1
    offset = 0
    rest = b""
    with path.open("rb") as fh:
        while True:
            chunk = fh.read(size)
            if not chunk:
                break
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            yield number, offset, data[:cut]
            number += data.count(b"\n", 0, cut)
            offset += cut
            rest = data[cut:]
    if rest:
        yield number, offset, rest + b"\n"


def read_block(first_line: int, data: bytes) -> Block:
    """One block's columns: the fast reading, or `local.row_of_line` line by line (which may
    raise NotLocal)."""
    try:
        return _fast(first_line, data)
    except (Slow, msgspec.DecodeError, msgspec.ValidationError, pa.ArrowInvalid):
        return _slow(first_line, data)


def _one_object_a_line(data: bytes) -> int:
    """The number of lines, when each is one JSON object written on it alone (starts with `{`,
    ends with `}`, no blank line, no carriage return); else Slow. With every line so, a
    newline can only fall between two top-level values, so that as many values as lines are
    one a line."""
    if b"\r" in data:
        raise Slow
    lines = data.split(b"\n")
    lines.pop()  # after the last newline
    if not all([line[:1] == b"{" and line[-1:] == b"}" for line in lines]):
        raise Slow
    return len(lines)


def _fast(first_line: int, data: bytes) -> Block:
    count = _one_object_a_line(data)
    lines = _LINES(data)
    if len(lines) != count:
        raise Slow
    mids = [line.message_id for line in lines]
    if None in mids or _CONTROL.search("".join(mids)):  # type: ignore[arg-type]
        raise Slow
    counts = [line.claim_count for line in lines if line.claim_count is not None]
    if counts and (min(counts) < -_INT32 or max(counts) >= _INT32):
        raise Slow
    dead = _times([line.dead_lettered_at for line in lines])
    _times([line.enqueued_at for line in lines])
    errors = [line.error for line in lines]
    descriptions = [line.description for line in lines]
    classes = [line.error_class for line in lines]
    shapes, keys = shape_keys([line.body for line in lines], body_style(data))
    return Block(
        first_line=first_line,
        message_ids=mids,  # type: ignore[arg-type]
        source_queues=[line.source_queue for line in lines],
        reasons=[line.reason for line in lines],
        errors=errors,
        descriptions=descriptions,
        error_classes=classes,
        digit_classes=(
            _digit_classes(errors),
            _digit_classes(descriptions),
            _digit_classes(classes),
        ),
        dead_lettered_at=dead,
        shapes=shapes,
        shape_keys=keys,
        attributes=_attributes([line.attributes for line in lines]),
        line_numbers=list(range(first_line, first_line + count)),
    )


def _digit_classes(texts: list[str | None]) -> pa.Array:
    """The texts with digits 2-9 as 1 (masking.as_digit_class), by one translation of the
    UTF-8 bytes of them all: UTF-8 holds bytes 0x32-0x39 only as those digits, and every
    length stays (msgspec refuses a lone surrogate, which `as_digit_class` keeps)."""
    column = pa.array(texts, pa.string())
    validity, offsets, data = column.buffers()
    if data is None:
        return column
    translated = pa.py_buffer(data.to_pybytes().translate(DIGIT_CLASSES))
    return pa.StringArray.from_buffers(
        len(column), offsets, translated, validity, column.null_count
    )


def _classes_of(texts: list[str | None]) -> pa.Array:
    from deadletter.pipeline.masking import as_digit_class

    return pa.array([as_digit_class(t) for t in texts], pa.string())


def _attributes(
    found: list[dict[str, str | _Attribute | None] | None],
) -> tuple[list[int], list[str], list[str]]:
    """`local._attribute` of each value, flattened; Slow where it would raise."""
    rows: list[int] = []
    names: list[str] = []
    values: list[str] = []
    for row, attributes in enumerate(found):
        if not attributes:
            continue
        for name, value in attributes.items():
            if isinstance(value, _Attribute):
                value = value.value
            elif value is None:
                continue
            elif value.startswith(("{", "[")):
                raise Slow
            rows.append(row)
            names.append(name)
            values.append(value)
    return rows, names, values


def _times(values: list[str | None]) -> pa.Array:
    """The times as `local._time` reads them (naive, UTC), parsed by Arrow; Slow where the
    text may read otherwise."""
    texts = pa.array(values, pa.string())
    if texts.null_count == len(texts):
        return pa.nulls(len(texts), _TIMESTAMP)
    if not pc.all(pc.match_substring_regex(texts, _TIME_RE2)).as_py():
        raise Slow
    zoned = pc.match_substring_regex(texts, _OFFSET)
    if not pc.any(zoned).as_py():
        return pc.replace_substring(texts, "Z", "").cast(_TIMESTAMP)
    none = pa.scalar(None, pa.string())
    naive = pc.replace_substring(pc.if_else(zoned, none, texts), "Z", "").cast(_TIMESTAMP)
    utc = pc.if_else(zoned, texts, none).cast(pa.timestamp("us", "UTC")).cast(_TIMESTAMP)
    return pc.if_else(zoned, utc, naive)


def _slow(first_line: int, data: bytes) -> Block:
    from deadletter.pipeline.lines import NotLocal, row_of_line
    from deadletter.pipeline.shape import shape_of

    rows = []
    numbers_of_lines = []
    number = first_line - 1
    try:
        for line in text_lines(data):
            number += 1
            # As text mode reads the file: universal newlines, then the line's end taken off.
            text = line.rstrip("\r\n")
            if text:
                rows.append(row_of_line(text))
                numbers_of_lines.append(number)
    except NotLocal as exc:
        raise NotLocal(f"line {number} holds {exc}") from exc
    except UnicodeDecodeError as exc:
        raise NotLocal(f"bytes that are not UTF-8 after line {number}") from exc
    times: list[datetime | None] = [r["dead_lettered_at"] for r in rows]
    errors = [r["error"] for r in rows]
    descriptions = [r["description"] for r in rows]
    classes = [r["error_class"] for r in rows]
    keys: list[tuple[str, str | None]] = []
    numbers: dict[tuple[str, str | None], int] = {}
    for r in rows:
        numbers.setdefault(("shape", shape_of(r["body"])), len(numbers))
    keys = list(numbers)
    attributes: tuple[list[int], list[str], list[str]] = ([], [], [])
    for i, r in enumerate(rows):
        for name, value in (r["attributes"] or {}).items():
            if value is not None:
                attributes[0].append(i)
                attributes[1].append(name)
                attributes[2].append(value)
    return Block(
        first_line=first_line,
        message_ids=[r["message_id"] for r in rows],
        source_queues=[r["source_queue"] for r in rows],
        reasons=[r["reason"] for r in rows],
        errors=errors,
        descriptions=descriptions,
        error_classes=classes,
        digit_classes=(_classes_of(errors), _classes_of(descriptions), _classes_of(classes)),
        dead_lettered_at=pa.array(times, _TIMESTAMP),
        shapes=pa.array([numbers[("shape", shape_of(r["body"]))] for r in rows], pa.int32()),
        shape_keys=keys,
        attributes=attributes,
        line_numbers=numbers_of_lines,
    )


def text_lines(data: bytes) -> Iterator[str]:
    """The lines of a block as a file opened in text mode gives them (universal newlines)."""
    import io

    yield from io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
