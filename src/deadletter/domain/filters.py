"""The dead-letter filter language: its names, and their parsing into one `DeadLetterFilter`.

Every face takes the same names with the same meaning (the native API's query parameters
and redrive fields, the SQS face's `DeadLetterFilter` extension of StartMessageMoveTask, the
CLI's options), and hands them here as text: a bad value is refused before anything is read
or moved, with the name and what it takes (`InvalidFilter`). What each selects is applied in
one place, `engine/selection.py`.

Regular expressions are the `regex` module's, not `re`'s: both backtrack, and a pattern such
as `(a+)+$` costs exponential time on a short text; `regex` takes a timeout per match
(`REGEX_TIMEOUT`), so one dead letter's error text costs a bounded time whatever the pattern,
and a pattern that runs out of it is refused (`engine.selection`). The pattern itself is at
most `MAX_REGEX` characters. (RE2 would be linear and need no timeout, but it is not in the
project's dependencies.) Body predicates are JMESPath (`jmespath`), a small language with a
specification and a compliance suite, rather than an expression parser of our own.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from datetime import UTC, datetime

import jmespath
import jmespath.exceptions
import regex

from deadletter.domain import errors, names
from deadletter.domain.limits import FILTER_ATTRIBUTES, FILTER_PATTERN, FILTER_TEXT
from deadletter.domain.model import DeadLetterFilter
from deadletter.domain.provenance import Reason

# Every name of the language, in the order docs/api.md explains them.
FILTER_KEYS = (
    "source_queue",
    "source_tag",
    "reason",
    "since",
    "until",
    "older_than",
    "newer_than",
    "pattern_id",
    "error_class",
    "error_contains",
    "error_matches",
    "attribute",
    "body",
    "min_deaths",
    "max_deaths",
    "redriven_by",
    "filter",
)
# Only `attribute` may be given more than once (each must hold).
REPEATABLE = frozenset({"attribute"})
MAX_FILTER_TEXT = FILTER_TEXT
MAX_REGEX = FILTER_PATTERN
MAX_ATTRIBUTE_FILTERS = FILTER_ATTRIBUTES
# Seconds one regular-expression match of one dead letter may take.
REGEX_TIMEOUT = 0.05
MAX_EPOCH = 253_402_300_799.0  # 9999-12-31T23:59:59Z
MAX_AGE = 10 * 366 * 86_400.0
MAX_DEATHS = 1_000_000
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400}


def parse(given: Mapping[str, Sequence[str]]) -> DeadLetterFilter:
    """The filter of `given`: each name of the language with its values as text. A name
    given twice that is not `attribute` is refused, as is a value out of range, a bad time,
    a bad expression, and a blank value (`blank`): a name given with nothing in it selects
    nothing, it is not taken as no filter, which would select the whole DLQ."""
    values: dict[str, str] = {}
    attributes: list[tuple[str, str | None]] = []
    for key, many in given.items():
        texts = _texts(key, many)
        if key in REPEATABLE:
            attributes.extend(_attribute(v) for v in texts)
        elif len(texts) > 1:
            raise errors.InvalidFilter(f"{key} may be given once")
        elif texts:
            values[key] = texts[0]
    if len(attributes) > MAX_ATTRIBUTE_FILTERS:
        raise errors.InvalidFilter(f"at most {MAX_ATTRIBUTE_FILTERS} attribute filters")
    where = DeadLetterFilter(
        source_queue=values.get("source_queue"),
        source_tag=values.get("source_tag"),
        reason=_reason(values.get("reason")),
        since=_time("since", values.get("since")),
        until=_time("until", values.get("until")),
        older_than=_age("older_than", values.get("older_than")),
        newer_than=_age("newer_than", values.get("newer_than")),
        pattern_id=values.get("pattern_id"),
        error_class=values.get("error_class"),
        error_contains=values.get("error_contains"),
        error_matches=_regex(values.get("error_matches")),
        attributes=tuple(attributes),
        body=_body(values.get("body")),
        min_deaths=_deaths("min_deaths", values.get("min_deaths")),
        max_deaths=_deaths("max_deaths", values.get("max_deaths")),
        redriven_by=values.get("redriven_by"),
        saved=_saved(values.get("filter")),
    )
    low, high = where.min_deaths, where.max_deaths
    if low is not None and high is not None and low > high:
        raise errors.InvalidFilter("min_deaths is more than max_deaths: nothing would match")
    return where


def _texts(key: str, many: Sequence[str]) -> list[str]:
    """The values given for `key`, each checked as text."""
    if key not in FILTER_KEYS:
        raise errors.InvalidFilter(
            f"{key[:40] or 'a blank name'} is not a filter; the filters are"
            f" {', '.join(FILTER_KEYS)}"
        )
    if not many:
        raise errors.InvalidFilter(f"{key} is given without a value; {_LEAVE_OUT}")
    for value in many:
        if "\x00" in value:
            raise errors.InvalidFilter(f"{key} may not contain NUL characters")
        if blank(value):
            raise errors.InvalidFilter(f"{key} is empty; {_LEAVE_OUT}")
        if len(value) > MAX_FILTER_TEXT:
            raise errors.InvalidFilter(f"{key} is longer than {MAX_FILTER_TEXT} characters")
    return list(many)


_LEAVE_OUT = "leave a filter out to select every dead letter, or give it a value"
# What a blank value may hold: spaces of every width, line breaks, controls and invisible
# format characters (a zero-width space, a BOM).
_BLANK = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})


def blank(text: str) -> bool:
    """Whether `text` shows nothing: empty, or spaces (U+3000 and U+00A0 included), controls
    and invisible characters only. A filter whose value is blank is refused on every face
    rather than dropped: dropped, it would widen a purge or a redrive to the whole DLQ."""
    return all(c.isspace() or unicodedata.category(c) in _BLANK for c in text)


def from_json(doc: Mapping[str, object]) -> DeadLetterFilter:
    """The filter of a JSON object's fields of the language (a redrive's body): strings,
    numbers, and for `attribute` a string or a list of them; other fields are ignored. A
    field of no value (`null`, `[]`, a blank text) is refused as in a query (`_texts`), not
    read as no filter."""
    given: dict[str, list[str]] = {}
    for key in FILTER_KEYS:
        if key not in doc:
            continue
        value = doc[key]
        if value is None or value == []:
            raise errors.InvalidFilter(f"{key} is empty; {_LEAVE_OUT}")
        items = value if isinstance(value, list) and key in REPEATABLE else [value]
        texts = []
        for item in items:
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise errors.InvalidFilter(f"{key} must be a string or a number")
            texts.append(item if isinstance(item, str) else str(item))
        given[key] = texts
    return parse(given)


def message_ids(ids: Sequence[str]) -> tuple[str, ...]:
    """A selection's `message_ids`: at least one, and none blank. A blank id names no dead
    letter, so a list holding one is refused as a blank filter value is, rather than moving
    or discarding fewer dead letters than the caller listed without a word."""
    if not ids:
        raise errors.InvalidFilter(
            "message_ids lists no id; leave it out to select by the other filters,"
            " or list at least one"
        )
    for i, value in enumerate(ids):
        if blank(value):
            raise errors.InvalidFilter(f"message_ids[{i}] is a blank id; give each id in full")
    return tuple(ids)


def _saved(name: str | None) -> str | None:
    if name is not None and not names.SAVED_FILTER.valid(name):
        raise errors.InvalidFilter(f"filter must name a saved filter: {names.SAVED_FILTER.rule}")
    return name


def narrowed(saved: DeadLetterFilter, given: DeadLetterFilter, name: str) -> DeadLetterFilter:
    """The saved filter `name` narrowed by the names `given` beside it: each must hold. A name
    both set is refused (which would win is not obvious), but `attribute`, whose lists join."""
    changes: dict[str, object] = {}
    for f in fields(DeadLetterFilter):
        if f.name == "saved":
            continue
        mine, theirs = getattr(saved, f.name), getattr(given, f.name)
        if theirs in (None, ()):
            continue
        if f.name == "attributes":
            changes[f.name] = (*mine, *theirs)
        elif mine not in (None, ()):
            raise errors.InvalidFilter(
                f"{f.name} is set by the saved filter {name!r}; give it there or here, not both"
            )
        else:
            changes[f.name] = theirs
    return replace(saved, saved=None, **changes)  # type: ignore[arg-type]


def _reason(value: str | None) -> Reason | None:
    if value is None:
        return None
    try:
        return Reason(value)
    except ValueError:
        raise errors.InvalidFilter(
            f"reason must be one of {', '.join(r.value for r in Reason)}, not {value[:40]!r}"
        ) from None


def _time(name: str, text: str | None) -> float | None:
    """ISO 8601 (a naive one is UTC) or epoch seconds."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise errors.InvalidFilter(
                f"{name} must be an ISO 8601 time or epoch seconds, not {text[:40]!r}"
            ) from None
        value = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    if not (math.isfinite(value) and 0 <= value <= MAX_EPOCH):
        raise errors.InvalidFilter(f"{name} must be a time between 1970 and 9999")
    return value


def _age(name: str, text: str | None) -> float | None:
    """Seconds, or a number with a unit: `90`, `90s`, `15m`, `2h`, `7d`."""
    if text is None:
        return None
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise errors.InvalidFilter(
            f"{name} must be a duration: seconds, or a number with s, m, h or d, not {text[:40]!r}"
        )
    seconds = float(found.group(1)) * _UNITS[found.group(2)]
    if not 0 < seconds <= MAX_AGE:
        raise errors.InvalidFilter(f"{name} must be more than 0 and at most ten years")
    return seconds


def _deaths(name: str, text: str | None) -> int | None:
    if text is None:
        return None
    if not text.isdigit() or not 0 <= int(text) <= MAX_DEATHS:
        raise errors.InvalidFilter(f"{name} must be an integer from 0 to {MAX_DEATHS}")
    return int(text)


def _attribute(text: str) -> tuple[str, str | None]:
    """`name=value`: the attribute has that value; `name` alone: the attribute is there."""
    name, has_value, value = text.partition("=")
    if blank(name):
        raise errors.InvalidFilter(f"attribute must be NAME or NAME=VALUE, not {text[:40]!r}")
    return name, value if has_value else None


def _regex(text: str | None) -> str | None:
    if text is None:
        return None
    if len(text) > MAX_REGEX:
        raise errors.InvalidFilter(f"error_matches is longer than {MAX_REGEX} characters")
    try:
        compiled_regex(text)
    except regex.error as exc:
        raise errors.InvalidFilter(f"error_matches is not a regular expression: {exc}") from None
    return text


def _body(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        compiled_body(text)
    except jmespath.exceptions.JMESPathError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise errors.InvalidFilter(f"body is not a JMESPath expression: {first}") from None
    return text


_REGEXES: dict[str, regex.Pattern[str]] = {}
_BODIES: dict[str, jmespath.parser.ParsedResult] = {}
_CACHED = 256


def compiled_regex(text: str) -> regex.Pattern[str]:
    """The pattern compiled once per process (a task's steps and a page's reads reuse it)."""
    found = _REGEXES.get(text)
    if found is None:
        if len(_REGEXES) >= _CACHED:
            _REGEXES.clear()
        found = _REGEXES[text] = regex.compile(text)
    return found


def compiled_body(text: str) -> jmespath.parser.ParsedResult:
    found = _BODIES.get(text)
    if found is None:
        if len(_BODIES) >= _CACHED:
            _BODIES.clear()
        found = _BODIES[text] = jmespath.compile(text)
    return found
