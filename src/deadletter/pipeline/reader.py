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

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

BLOCK_BYTES = 8 * 1024 * 1024
_INT32 = 2**31
_NULL = msgspec.Raw(b"null")
_CONTROL = re.compile(r"[\x00-\x1f]")


class _Attribute(msgspec.Struct, forbid_unknown_fields=True):
    value: str
    type: Any = None


class _Line(msgspec.Struct):
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


class _Texts(msgspec.Struct):
    description: str | None = None
    error: str | None = None
    error_class: str | None = None
    body: msgspec.Raw = _NULL


_LINES = msgspec.json.Decoder(_Line).decode_lines
_TEXTS = msgspec.json.Decoder(_Texts).decode_lines
_DIGITS = bytes.maketrans(b"23456789", b"11111111")
_ANY = msgspec.json.Decoder().decode
_ENCODE = msgspec.json.Encoder().encode

# `local._TIME` as RE2 reads it, stricter where Arrow's parser and `datetime.fromisoformat`
# might disagree (a 60th second, an offset past 23:59): such a time goes the slow way.
_TIME_RE2 = (
    r"^\d{4}-\d{2}-\d{2}[T ](?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,6})?"
    r"(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)?$"
)
_OFFSET = r"[+-]\d{2}:\d{2}$"
_TIMESTAMP = pa.timestamp("us")

# A body's shape key (see `shape_keys`): each string literal becomes `\x02` + its text if it
# is a key, else `\x02\x03`; each number `0`, so that the key paths survive and the values go.
_LIT_BODY = r'(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*'
_KEYS = rf'"({_LIT_BODY})"(:)|"{_LIT_BODY}"'
_NUMBERS = r"(\x02[^\x03]*\x03)|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"


# A body key with blanks before its colon, or more than one blank (or another kind) after it.
_ODD_BODY_KEY = re.compile(rb'"body"\s+:|"body":(?:\s\s|[\t\r\n])')
_DUMPS = [
    {"separators": seps, "ensure_ascii": ascii_only}
    for seps in ((", ", ": "), (",", ":"))
    for ascii_only in (False, True)
]


_NO_BODY: tuple[str, str | None] = ("shape", None)
# A number of 16 digits or more, or written with an exponent (or what looks like one).
_UNSURE_DIGITS = re.compile(rb"[0-9]{16}|[0-9.]{17}|[0-9][eE]")
_OPENING = frozenset(b"{[")
_QUOTE = ord('"')


class Slow(ValueError):
    """A block the fast reading is not sure of: read it line by line."""


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
    digit_classes: tuple[list[str | None], list[str | None], list[str | None]]
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
    shaped = _TEXTS(data.translate(_DIGITS)) if b"\\u" not in data else None
    shapes, keys = _shapes(
        [line.body for line in lines],
        _body_style(data),
        None if shaped is None else [t.body for t in shaped],
    )
    return Block(
        first_line=first_line,
        message_ids=mids,  # type: ignore[arg-type]
        source_queues=[line.source_queue for line in lines],
        reasons=[line.reason for line in lines],
        errors=errors,
        descriptions=descriptions,
        error_classes=classes,
        digit_classes=_digit_classes(shaped, errors, descriptions, classes),
        dead_lettered_at=dead,
        shapes=shapes,
        shape_keys=keys,
        attributes=_attributes([line.attributes for line in lines]),
        line_numbers=list(range(first_line, first_line + count)),
    )


def _digit_classes(
    shaped: list[_Texts] | None, *texts: list[str | None]
) -> tuple[list[str | None], list[str | None], list[str | None]]:
    """The texts with digits 2-9 as 1: as decoded from the block with its digits so
    translated (one pass over its bytes), where no `\\u` escape holds a digit that is not a
    text's; else one text at a time."""
    if shaped is not None:
        return (
            [t.error for t in shaped],
            [t.description for t in shaped],
            [t.error_class for t in shaped],
        )
    return _classes_of(*texts)


def _classes_of(
    *texts: list[str | None],
) -> tuple[list[str | None], list[str | None], list[str | None]]:
    from deadletter.pipeline.masking import as_digit_class

    error, description, error_class = ([as_digit_class(t) for t in column] for column in texts)
    return error, description, error_class


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


def _body_style(data: bytes) -> bool:
    """Whether a nested body of the block may follow `"body": ` (else only `"body":`); Slow
    where a body key is written in a way `local._body` does not look for."""
    if _ODD_BODY_KEY.search(data):
        raise Slow
    return b'"body": {' in data or b'"body": [' in data


def _as_written(body: bytes, spaced: bool) -> bool:
    """Whether a nested body's text is one of the forms `local._body` finds in its line
    (which it then keeps): msgspec's, when no body of the block follows `"body": `, or
    json.dumps's with either separators and either ASCII choice."""
    value = _ANY(body)
    if not spaced and _ENCODE(value) == body:
        return True
    text = body.decode()
    return any(json.dumps(value, **options) == text for options in _DUMPS)  # type: ignore[arg-type]


def _all_as_written(written: list[bytes], spaced: bool) -> bool:
    """`_as_written` of every body, by one decoding and one encoding of them all as one JSON
    array where it holds (two equal texts of JSON arrays have the same elements)."""
    if not written:
        return True
    if spaced:
        whole = b"[" + b", ".join(written) + b"]"
        values = _ANY(whole)
        if json.dumps(values, ensure_ascii=False).encode() == whole:
            return True
    else:
        whole = b"[" + b",".join(written) + b"]"
        if _ENCODE(_ANY(whole)) == whole:
            return True
    return all(_as_written(body, spaced) for body in written)


def _shapes(
    bodies: list[msgspec.Raw], spaced: bool, shaped: list[msgspec.Raw] | None
) -> tuple[pa.Array, list[tuple[str, str | None]]]:
    """Each body's number among the block's shape keys, and the keys; Slow for a body
    `local._body` would refuse or read otherwise. Nested bodies kept as written are blanked
    over the whole column with RE2, once per body with its digits as classes (`shaped`)
    where that is sure to give what the body's own text gives; a text body goes through
    `shape.shape_of` as the Spark job's expression does, once per distinct text."""
    from deadletter.pipeline.shape import shape_of

    texts = [bytes(raw) for raw in bodies]
    keys: list[tuple[str, str | None]] = [_NO_BODY]
    numbers = [0] * len(texts)
    nested: list[int] = []
    seen: dict[str, int] = {}
    for i, body in enumerate(texts):
        head = body[0]
        if head in _OPENING:
            nested.append(i)
        elif head == _QUOTE:
            text = _ANY(body)
            number = seen.get(text)
            if number is None:
                number = seen[text] = len(keys)
                keys.append(("shape", shape_of(text)))
            numbers[i] = number
        elif body != b"null":
            raise Slow
    if shaped is not None and nested:
        nested = _by_digit_class(nested, [bytes(shaped[i]) for i in nested], spaced, keys, numbers)
    written = [texts[i] for i in nested]
    if not _all_as_written(written, spaced):
        raise Slow
    if nested:
        blanked = _blanked(written)
        first = len(keys)
        keys += [("json", text) for text in blanked.dictionary.to_pylist()]
        for i, j in zip(nested, blanked.indices.to_pylist(), strict=True):
            numbers[i] = first + j
    return pa.array(numbers, pa.int32()), keys


def _by_digit_class(
    nested: list[int],
    classes: list[bytes],
    spaced: bool,
    keys: list[tuple[str, str | None]],
    numbers: list[int],
) -> list[int]:
    """The shape keys of nested bodies found once per body with its digits 2-9 as 1, and the
    rows this cannot settle (returned: their own texts decide).

    Whether a body is written as `_as_written` asks does not depend on its digits' values
    while each number has at most 15 digits and no exponent (a shorter decimal is then
    always the shortest form of its value, zeros stay zeros, lengths stay lengths) and no
    `\\u` escape is translated (the caller's); where a class is not so written, its bodies
    are checked one by one. A blanked body keeps only its keys' texts: where one holds a
    1, a key's digits may have been others, and the body's own text is blanked instead."""
    groups: dict[bytes, list[int]] = {}
    for row, shape in zip(nested, classes, strict=True):
        groups.setdefault(shape, []).append(row)
    rest: list[int] = []
    sure = []
    for shape, rows in groups.items():
        if _UNSURE_DIGITS.search(shape):
            rest += rows
        else:
            sure.append(shape)
    if not _all_as_written(sure, spaced):
        written = [_as_written(shape, spaced) for shape in sure]
        rest += [
            row for shape, ok in zip(sure, written, strict=True) if not ok for row in groups[shape]
        ]
        sure = [shape for shape, ok in zip(sure, written, strict=True) if ok]
    if sure:
        blanked = _blanked(sure)
        first = len(keys)
        texts = blanked.dictionary.to_pylist()
        keys += [("json", text) for text in texts]
        for shape, j in zip(sure, blanked.indices.to_pylist(), strict=True):
            if "1" in texts[j]:
                rest += groups[shape]
            else:
                for row in groups[shape]:
                    numbers[row] = first + j
    return rest


def _blanked(texts: list[bytes]) -> pa.DictionaryArray:
    """The texts with each value blanked, their keys kept (see `_KEYS`), dictionary-encoded."""
    literals = pc.replace_substring_regex(_strings(texts), _KEYS, "\x02\\1\x03\\2")
    # `\1` then `0`: a literal keeps its text and gains a 0, a number is one 0.
    return pc.replace_substring_regex(literals, _NUMBERS, "\\10").dictionary_encode()


def _strings(texts: list[bytes]) -> pa.Array:
    """The texts (UTF-8 that msgspec has read) as an Arrow string array, built from their
    joined bytes and their offsets."""
    from itertools import accumulate

    offsets = pa.array([0, *accumulate(map(len, texts))], pa.int32())
    return pa.StringArray.from_buffers(
        len(texts), offsets.buffers()[1], pa.py_buffer(b"".join(texts))
    )


def paths_of(key: tuple[str, str | None]) -> list[str]:
    """text.key_paths of every body with this shape key."""
    from deadletter.pipeline.shape import key_paths_of_shape
    from deadletter.pipeline.text import key_paths

    kind, text = key
    if kind == "shape":
        return key_paths_of_shape(text)
    # Back to JSON: each literal as it was if a key, empty if a value; each number 0.
    return key_paths(re.sub(r"\x02([^\x03]*)\x030", r'"\1"', text or ""))


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
        digit_classes=_classes_of(errors, descriptions, classes),
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
