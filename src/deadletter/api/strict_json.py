"""JSON as RFC 8259 defines it, read at the edge so nothing unservable is ever stored.

Python's `json` module accepts `NaN`, `Infinity`, numbers that overflow to infinity (`1e400`)
and lone UTF-16 surrogates (`"\\ud800"`), and recurses without bound. Each of those, once
stored, makes every later answer that includes it fail, so both faces parse request bodies
and JSON-valued parameters here instead.

msgspec parses (six times faster than `json` on the faces' requests, `./dev bench
framework`) and refuses all of those itself; a text it refuses is parsed again by the
`json` module with the checks below, so what is refused, and the words of the refusal, are
what they were with `json` alone.

`unknown_name` is the one rule by which both faces refuse a field, parameter or key they do
not know, in the same words.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Collection, Iterable
from typing import Any

import msgspec

MAX_DEPTH = 64


class InvalidJson(ValueError):
    """The text is not JSON that can be stored and served again."""


def _no_constant(name: str) -> Any:
    raise InvalidJson(f"{name} is not a JSON number; numbers must be finite")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidJson(f"the number {text[:40]} is out of range")
    return value


def loads(data: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse `data`, refusing what RFC 8259 or a later answer cannot carry."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidJson("the body is not valid UTF-8") from exc
    else:
        text = data
    try:
        value = _decode(data)
    except (msgspec.DecodeError, RecursionError):
        value = _stdlib_loads(text, max_depth)
    # Cheap byte counts decide whether the slower walks are needed at all.
    if text.count("[") + text.count("{") > max_depth:
        _check_depth(value, max_depth)
    if "\\ud" in text or "\\uD" in text:
        check_encodable(value)
    return value


_decode = msgspec.json.Decoder().decode


def _stdlib_loads(text: str, max_depth: int) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except InvalidJson:
        raise
    except RecursionError as exc:
        raise InvalidJson(f"JSON nested deeper than {max_depth} levels") from exc
    except ValueError as exc:  # JSONDecodeError, and ints longer than Python converts
        raise InvalidJson(f"not valid JSON: {exc}") from exc


def _check_depth(value: Any, max_depth: int) -> None:
    level = [(value, 1)]
    while level:
        node, depth = level.pop()
        if isinstance(node, dict | list):
            if depth > max_depth:
                raise InvalidJson(f"JSON nested deeper than {max_depth} levels")
            children = node.values() if isinstance(node, dict) else node
            level.extend((child, depth + 1) for child in children)


def check_encodable(value: Any) -> None:
    """Refuse strings (keys included) that cannot be written as UTF-8: lone surrogates."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidJson("a string holds a lone UTF-16 surrogate (not valid Unicode)") from exc


def unknown_name(given: Iterable[str], known: Collection[str], what: str = "field") -> str | None:
    """The words refusing the first name of `given` that is not in `known`, or None when every
    name is known: both faces refuse what they do not know (a misspelled filter would otherwise
    select everything) and name the known one a typo is closest to."""
    missing = [name for name in given if name not in known]
    if not missing:
        return None
    name = sorted(missing)[0]
    near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6) or _within(name, known)
    hint = f"; did you mean {_quoted(near[0])}?" if near else "."
    listed = ""
    if not near and len(known) <= MAX_LISTED:
        listed = f" It takes {', '.join(sorted(known))}." if known else ""
    return f"Unknown {what} {_quoted(name)}{hint}{listed}"


def _within(name: str, known: Collection[str]) -> list[str]:
    """The longest known name inside `name` or holding it (`delay` for `delay_seconds`), for
    the misspellings that add or drop a word, which difflib's ratio finds too far."""
    found = sorted(
        (k for k in known if len(k) > 2 and (k in name or name in k)), key=lambda k: -len(k)
    )
    return found[:1]


# The most known names an unknown one's refusal lists (a queue's metadata has more).
MAX_LISTED = 16


def _quoted(name: str) -> str:
    text = json.dumps(name, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."
