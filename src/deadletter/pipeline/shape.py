"""JSON body shapes on the JVM: what text.key_paths reads of a body, values left out."""

from __future__ import annotations

import re
from typing import Any

# A JSON string literal as Python's json module accepts it (no raw control characters, only
# the standard escapes), and a JSON number standing alone. Possessive loops: a long string
# value is one step, not one stack frame per character.
_LIT = r'"(?:[^"\\\x{00}-\x{1f}]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+"'
_JSON_SPACE = r"[ \t\n\r]*"
_NUMBER = r"(?<![\w.+-])-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![\w.+-])"
_KEY_OR_VALUE = rf"{_LIT}(?!{_JSON_SPACE}:)|({_LIT}){_JSON_SPACE}:"
_SHAPE_SEP, _KEY_SEP = "\x00", "\x01"


def body_shape(body: Any) -> Any:
    """What text.key_paths reads of a JSON body, values left out: the text with every string
    literal as `"` and every number as `0`, then the literals that are keys, in order. Bodies
    of one message type share a shape, so key paths are computed once per shape
    (`key_paths_of_shape`) instead of once per message."""
    from pyspark.sql import functions as F

    skeleton = F.regexp_replace(F.regexp_replace(body, _LIT, '"'), _NUMBER, "0")
    keys = F.array_join(F.regexp_extract_all(body, F.lit(_KEY_OR_VALUE), 1), _KEY_SEP)
    return F.concat(skeleton, F.lit(_SHAPE_SEP), keys)


# The same expressions for Python's `re`: `\x00` for Java's `\x{00}`, and ASCII classes, as
# Java's `\w` is by default.
_PY_LIT = re.compile(_LIT.replace(r"\x{00}", r"\x00").replace(r"\x{1f}", r"\x1f"), re.ASCII)
_PY_NUMBER = re.compile(_NUMBER, re.ASCII)
_PY_KEY_OR_VALUE = re.compile(
    _KEY_OR_VALUE.replace(r"\x{00}", r"\x00").replace(r"\x{1f}", r"\x1f"), re.ASCII
)


def shape_of(body: str | None) -> str | None:
    """`body_shape` in this process: the same text, so that the in-process engine computes
    key paths once per shape as Spark does."""
    if body is None:
        return None
    skeleton = _PY_NUMBER.sub("0", _PY_LIT.sub('"', body))
    keys = _KEY_SEP.join(m.group(1) or "" for m in _PY_KEY_OR_VALUE.finditer(body))
    return skeleton + _SHAPE_SEP + keys


def key_paths_of_shape(shape: str | None) -> list[str]:
    """text.key_paths of any body with this shape: the shape is turned back into JSON with
    empty strings and zeros as values, which has the same key paths. A body that is not
    JSON keeps a quote no literal accounted for, and gives [] as text.key_paths does."""
    from deadletter.pipeline.text import key_paths

    if not shape:
        return []
    skeleton, _, joined = shape.rpartition(_SHAPE_SEP)
    pieces = skeleton.split('"')
    literals = joined.split(_KEY_SEP) if len(pieces) > 1 else []
    if len(literals) != len(pieces) - 1:
        return []
    out = [pieces[0]]
    for literal, piece in zip(literals, pieces[1:], strict=True):
        out += [literal or '""', piece]
    return key_paths("".join(out))
