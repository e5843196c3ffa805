"""The shape keys of a block's bodies for the in-process engine's reading (reader.py): a key
for which every body with it has the same key paths. Nested bodies kept as written are
blanked over the whole column with RE2, once per body with its digits as classes where that
is sure, and what a class gives is kept between blocks (a cache, never a result); a text
body goes through `shape.shape_of` as the Spark job's expression does, once per text."""

from __future__ import annotations

import json
import re
from itertools import accumulate

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from deadletter.pipeline.masking import DIGIT_CLASSES, KEPT

Key = tuple[str, str | None]


class Slow(ValueError):
    """A block the fast reading is not sure of: read it line by line."""


NO_BODY: Key = ("shape", None)
_ANY = msgspec.json.Decoder().decode
_ENCODE = msgspec.json.Encoder().encode

# A body's shape key (see `_blanked`): each string literal becomes `\x02` + its text if it
# is a key, else `\x02\x03`; each number `0`, so that the key paths survive and the values go.
_LIT_BODY = r'(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*'
_KEYS = rf'"({_LIT_BODY})"(:)|"{_LIT_BODY}"'
_NUMBERS = r"(\x02[^\x03]*\x03)|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
# Each literal of a body, and the colon after it where it is a key, as `_KEYS` reads them.
_LITERAL = re.compile(rf'"({_LIT_BODY})"(:?)'.encode())

# A body key with blanks before its colon, or more than one blank (or another kind) after it.
_ODD_BODY_KEY = re.compile(rb'"body"\s+:|"body":(?:\s\s|[\t\r\n])')
_DUMPS = [
    {"separators": seps, "ensure_ascii": ascii_only}
    for seps in ((", ", ": "), (",", ":"))
    for ascii_only in (False, True)
]
# A number of 16 digits or more, or written with an exponent (or what looks like one).
_UNSURE_DIGITS = re.compile(rb"[0-9]{16}|[0-9.]{17}|[0-9][eE]")
_OPENING = frozenset(b"{[")
_QUOTE = ord('"')

# What each digit class of a nested body says of every body with it, by whether the block's
# bodies may follow `"body": ` (which decides how a body may be written): None where each
# body's own text decides, else the class's blanked text and the places of its keys that
# hold a 1 (a 1 there may stand for another digit: the bodies' own digits at those places
# decide, `_BY_KEY_DIGITS`).
_CLASSES: dict[bool, dict[bytes, tuple[str, tuple[tuple[int, int], ...]] | None]] = {
    False: {},
    True: {},
}
# The blanked text of the bodies of a class whose keys hold these digits.
_BY_KEY_DIGITS: dict[tuple[bytes, ...], str] = {}
# The shape of each text body (its JSON literal as written).
_TEXT_SHAPES: dict[bytes, str | None] = {}


def body_style(data: bytes) -> bool:
    """Whether a nested body of the block may follow `"body": ` (else only `"body":`); Slow
    where a body key is written in a way `lines._body` does not look for."""
    if _ODD_BODY_KEY.search(data):
        raise Slow
    return b'"body": {' in data or b'"body": [' in data


def shape_keys(bodies: list[msgspec.Raw], spaced: bool) -> tuple[pa.Array, list[Key]]:
    """Each body's number among the block's shape keys, and the keys (("json", blanked text)
    or ("shape", shape.shape_of(text))); Slow for a body `lines._body` would refuse or read
    otherwise."""
    texts = [bytes(raw) for raw in bodies]
    keys: dict[Key, int] = {NO_BODY: 0}
    numbers = [0] * len(texts)
    nested: list[int] = []
    for i, body in enumerate(texts):
        head = body[0]
        if head in _OPENING:
            nested.append(i)
        elif head == _QUOTE:
            numbers[i] = keys.setdefault(("shape", _text_shape(body)), len(keys))
        elif body != b"null":
            raise Slow
    if nested:
        blanked = _nested_keys([texts[i] for i in nested], spaced)
        for i, text in zip(nested, blanked, strict=True):
            numbers[i] = keys.setdefault(("json", text), len(keys))
    return pa.array(numbers, pa.int32()), list(keys)


def _text_shape(body: bytes) -> str | None:
    from deadletter.pipeline.shape import shape_of

    found = _TEXT_SHAPES.get(body, False)
    if found is False:
        if len(_TEXT_SHAPES) >= KEPT:
            _TEXT_SHAPES.clear()
        found = _TEXT_SHAPES[body] = shape_of(_ANY(body))
    return found  # type: ignore[return-value]


def _nested_keys(written: list[bytes], spaced: bool) -> list[str]:
    """The blanked text of each nested body, or Slow where one is not written as the export
    writes it. Once per digit class (digits 2-9 as 1, one translation of them all), where
    that is sure (`_learned`); bodies with a `\\u` escape, whose digits may be a character's,
    by their own texts."""
    joined = b"\n".join(written)  # a body on one line holds no newline
    classes = joined.translate(DIGIT_CLASSES).split(b"\n")
    known = _CLASSES[spaced]
    if len(known) >= KEPT:
        known.clear()
    new = [c for c in dict.fromkeys(classes) if c not in known]
    if new:
        known.update(_learned(new, spaced))
    escaped = b"\\u" in joined
    out: list[str] = [""] * len(written)
    own: list[int] = []
    by_digits: dict[tuple[bytes, ...], list[int]] = {}
    for row, (body, shape) in enumerate(zip(written, classes, strict=True)):
        found = known[shape]
        if found is None or (escaped and b"\\u" in body):
            own.append(row)
        elif found[1]:
            by_digits.setdefault((shape, *[body[s:e] for s, e in found[1]]), []).append(row)
        else:
            out[row] = found[0]
    if by_digits:
        _by_key_digits(written, by_digits, out)
    if own:
        texts = [written[row] for row in own]
        if not _all_as_written(texts, spaced):
            raise Slow
        for row, text in zip(own, _blanked(texts), strict=True):
            out[row] = text
    return out


def _by_key_digits(
    written: list[bytes], by_digits: dict[tuple[bytes, ...], list[int]], out: list[str]
) -> None:
    """The blanked texts of bodies by their class and their keys' digits: the bodies of a
    class whose keys hold the same digits blank alike, so one of each is blanked."""
    if len(_BY_KEY_DIGITS) >= KEPT:
        _BY_KEY_DIGITS.clear()
    missing = [k for k in by_digits if k not in _BY_KEY_DIGITS]
    blanked = _blanked([written[by_digits[k][0]] for k in missing])
    _BY_KEY_DIGITS.update(zip(missing, blanked, strict=True))
    for k, rows in by_digits.items():
        text = _BY_KEY_DIGITS[k]
        for row in rows:
            out[row] = text


def _learned(
    classes: list[bytes], spaced: bool
) -> dict[bytes, tuple[str, tuple[tuple[int, int], ...]] | None]:
    """What each digit class says of its bodies (see `_CLASSES`).

    Whether a body is written as `_as_written` asks does not depend on its digits' values
    while each number has at most 15 digits and no exponent (a shorter decimal is then
    always the shortest form of its value, zeros stay zeros, lengths stay lengths) and no
    `\\u` escape is translated (the caller's). Blanking reads a digit only as a digit or a
    zero, so that bodies of one class blank alike but for their keys' digits; a class's
    keys sit at the same places in each of its bodies (a translation keeps every length)."""
    learned: dict[bytes, tuple[str, tuple[tuple[int, int], ...]] | None] = dict.fromkeys(classes)
    sure = classes
    if _UNSURE_DIGITS.search(b"\n".join(classes)):
        sure = [c for c in classes if not _UNSURE_DIGITS.search(c)]
    if not _all_as_written(sure, spaced):
        sure = [c for c in sure if _as_written(c, spaced)]
    for shape, text in zip(sure, _blanked(sure), strict=True):
        if "1" not in text:
            learned[shape] = (text, ())
            continue
        places = tuple(
            m.span(1) for m in _LITERAL.finditer(shape) if m.group(2) and b"1" in m.group(1)
        )
        learned[shape] = (text, places) if places else None
    return learned


def _as_written(body: bytes, spaced: bool) -> bool:
    """Whether a nested body's text is one of the forms `lines._body` finds in its line
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


def _blanked(texts: list[bytes]) -> list[str]:
    """The texts with each value blanked, their keys kept (see `_KEYS`)."""
    if not texts:
        return []
    literals = pc.replace_substring_regex(_strings(texts), _KEYS, "\x02\\1\x03\\2")
    # `\1` then `0`: a literal keeps its text and gains a 0, a number is one 0.
    return pc.replace_substring_regex(literals, _NUMBERS, "\\10").to_pylist()  # type: ignore[no-any-return]


def _strings(texts: list[bytes]) -> pa.Array:
    """The texts (UTF-8 that msgspec has read) as an Arrow string array, built from their
    joined bytes and their offsets."""
    offsets = pa.array([0, *accumulate(map(len, texts))], pa.int32())
    return pa.StringArray.from_buffers(
        len(texts), offsets.buffers()[1], pa.py_buffer(b"".join(texts))
    )


def paths_of(key: Key) -> list[str]:
    """text.key_paths of every body with this shape key."""
    from deadletter.pipeline.shape import key_paths_of_shape
    from deadletter.pipeline.text import key_paths

    kind, text = key
    if kind == "shape":
        return key_paths_of_shape(text)
    # Back to JSON: each literal as it was if a key, empty if a value; each number 0.
    return key_paths(re.sub(r"\x02([^\x03]*)\x030", r'"\1"', text or ""))
