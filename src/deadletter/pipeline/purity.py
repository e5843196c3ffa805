"""How sure each pattern is: its members read against its template, the variable places
that hide a split cut apart before grouping is final (`split_hidden`), and what is left
explained (`explain`): each variable's values with their counts, a warning where a place
still looks like two events, a purity score, and a template with the original punctuation.

Both engines call these on the same distinct masked texts, so the answers are the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from deadletter.domain.patterns import purity_of
from deadletter.pipeline import rules
from deadletter.pipeline.text import PLACEHOLDERS, TAIL_MARK

WILDCARD = "<*>"
HEAD_MARK = rules.HEAD_MARK
CONTEXT_SEPARATOR = " :: "
EXAMPLE_VALUES = 3


def alignment(template: str) -> re.Pattern[str] | None:
    """A regular expression that reads a member's tokens against its template: constants as
    they are, each variable one group of one token or more, or of none (a template may hold
    members whose value there is empty): the group and its blank are optional, and an empty
    value reads as ""."""
    if not template:
        return None
    out = ""
    blank = ""
    for token in template.split(" "):
        if token in PLACEHOLDERS:
            if out:
                out += "(?: (.+?))?"
            else:
                out, blank = "(?:(.+?) )?", ""
                continue
        else:
            part = r"(\S+):" if token == WILDCARD + HEAD_MARK else re.escape(token)
            out += blank + part
        blank = " "
    return re.compile("^" + out + "$")


def _member(text: str) -> str:
    return " ".join(t for t in text.split(" ") if t != TAIL_MARK)


def _values(template: str, members: dict[str, int]) -> list[dict[str, int]] | None:
    """What each variable of `template` holds over its members, with counts; None when a
    member does not read against it."""
    shape = alignment(template)
    if shape is None:
        return None
    out: list[dict[str, int]] = [{} for _ in range(shape.groups)]
    for text, n in members.items():
        match = shape.match(_member(text))
        if match is None:
            return None
        for seen, value in zip(out, match.groups(default=""), strict=True):
            seen[value] = seen.get(value, 0) + n
    return out


def _read(
    template: str, members: dict[str, int]
) -> tuple[list[dict[str, int]], list[dict[int, str]]]:
    """Each variable's values with counts, and each member's values by place; members that
    do not read against the template are left out."""
    shape = alignment(template)
    if shape is None:
        return [], []
    values: list[dict[str, int]] = [{} for _ in range(shape.groups)]
    rows = []
    for text, n in members.items():
        match = shape.match(_member(text))
        if match is None:
            continue
        row = dict(enumerate(match.groups(default="")))
        rows.append(row)
        for i, value in row.items():
            values[i][value] = values[i].get(value, 0) + n
    return values, rows


def _constant_words(value: str) -> bool:
    """Whether a value holds a word that is not a placeholder: the values of a hidden split
    are words of the events' own text; a value that is all placeholders is a variable's."""
    return any(t and t not in PLACEHOLDERS for t in value.split(" "))


def _few_recurring(seen: dict[str, int], least: int) -> bool:
    """rules.MAX_SPLIT_VALUES values or fewer, at least two, each a run of words of the
    event's own text seen in `least` messages or more."""
    return (
        2 <= len(seen) <= rules.MAX_SPLIT_VALUES
        and min(seen.values()) >= least
        and all(_constant_words(v) for v in seen)
    )


def _hidden_split(values: list[dict[str, int]], by: list[dict[int, str]], least: int) -> int:
    """The variable place that hides two events or more, or -1 (`_hidden_splits`' first)."""
    found = _hidden_splits(values, by, least)
    return found[0] if found else -1


def _hidden_splits(values: list[dict[str, int]], by: list[dict[int, str]], least: int) -> list[int]:
    """The variable places that hide two events or more.

    A place whose few values each recur (`_few_recurring`) is one when its values differ in
    length (`format` / `repartition parameter <NUM>`: phrases of separate messages), or when
    another such place takes one value for each of its values (`read` with `short read`,
    `extend` with `No space left on device`): the members disagree on a structure the
    template hides. A variable's values come and go independently of the other places."""
    few = [i for i, seen in enumerate(values) if _few_recurring(seen, least)]
    out = []
    for i in few:
        if len({len(v.split(" ")) if v else 0 for v in values[i]}) > 1:
            out.append(i)
            continue
        for j in few:
            if j != i and len({(row[i], row[j]) for row in by}) == len(values[i]) == len(values[j]):
                out.append(i)
                break
    return out


def split_hidden(found: dict[str, str], counts: dict[str, int]) -> dict[str, str]:
    """`found` (text -> template) with each template whose variable place hides a split
    (`_hidden_split`) cut by that place's values, which become constants of the parts."""
    members: dict[str, dict[str, int]] = {}
    for text, template in found.items():
        members.setdefault(template, {})[text] = counts[text]
    out = dict(found)
    for template, texts in sorted(members.items()):
        for new, part in _cut(template, texts, rules.MAX_SPLIT_DEPTH):
            out.update((text, new) for text in part)
    return out


def _cut(template: str, texts: dict[str, int], depth: int) -> list[tuple[str, dict[str, int]]]:
    if depth == 0 or len(texts) < 2:
        return [(template, texts)]
    shape = alignment(template)
    if shape is None:
        return [(template, texts)]
    rows: dict[str, dict[int, str]] = {}
    for text in texts:
        match = shape.match(_member(text))
        if match is None:
            return [(template, texts)]
        rows[text] = dict(enumerate(match.groups(default="")))
    values: list[dict[str, int]] = [{} for _ in range(shape.groups)]
    for text, row in rows.items():
        for i, value in row.items():
            values[i][value] = values[i].get(value, 0) + texts[text]
    place = _hidden_split(values, list(rows.values()), rules.MIN_RECURRENCE)
    if place < 0:
        return [(template, texts)]
    parts: dict[str, dict[str, int]] = {}
    for text, row in rows.items():
        parts.setdefault(row[place], {})[text] = texts[text]
    out = []
    for value, part in sorted(parts.items()):
        for new, members in _cut(_filled(template, place, value), part, depth - 1):
            out.append((_settled(new, members), members))
    return out


def _settled(template: str, texts: dict[str, int]) -> str:
    """A part's template with each variable place that holds one run of words in all its
    members written as those words: the cut left a single value there."""
    values = _values(template, texts)
    if not values:
        return template
    for place in reversed(range(len(values))):
        (value, *others) = values[place]
        if not others and _constant_words(value):
            template = _filled(template, place, value)
    return template


def _filled(template: str, place: int, value: str) -> str:
    """`template` with its variable number `place` (from 0) holding `value`."""
    tokens = template.split(" ")
    seen = -1
    for i, token in enumerate(tokens):
        if token in PLACEHOLDERS or token == WILDCARD + HEAD_MARK:
            seen += 1
            if seen == place:
                filled = value + HEAD_MARK if token == WILDCARD + HEAD_MARK else value
                tokens[i : i + 1] = filled.split(" ") if filled else []
                break
    return " ".join(tokens)


def explain(
    found: dict[tuple[str, str], str], counts: Iterable[tuple[str, str, int]]
) -> dict[str, dict[str, object]]:
    """How sure each template is, by template: `variables`, for each variable (`<*>`, a
    program name `<*>:`, a typed placeholder), the values its members hold there, the most
    frequent first (at most EXAMPLE_VALUES, with their `counts`), how many there are, and a
    `warning` where the place still looks like a hidden split (its few values each recur in
    two messages or more); `purity`, the share of the members in the largest value of the
    worst such place (1.0 without one); and `impure`, whether any place is so flagged.

    `found` is `with_context`'s answer and `counts` its input: both engines call this on the
    same distinct pairs, so the answers are the same too."""
    members: dict[str, dict[str, int]] = {}
    for text, context, n in counts:
        head = found[(text, context)].split(CONTEXT_SEPARATOR, 1)[0]
        seen = members.setdefault(head, {})
        seen[text] = seen.get(text, 0) + int(n)
    by_head: dict[str, dict[str, object]] = {}
    for head, texts in members.items():
        by_head[head] = _explained(head, texts)
    out: dict[str, dict[str, object]] = {}
    for template in set(found.values()):
        head = template.split(CONTEXT_SEPARATOR, 1)[0]
        out[template] = by_head.get(head) or {"variables": [], "purity": 1.0, "impure": False}
    return out


def _explained(head: str, texts: dict[str, int]) -> dict[str, object]:
    values, rows = _read(head, texts)
    places = [t for t in head.split(" ") if t in PLACEHOLDERS or t == WILDCARD + HEAD_MARK]
    total = sum(texts.values())
    # Places that still look like a hidden split with values seen twice or more: too few
    # messages to cut (split_hidden), enough to warn.
    suspect = set(_hidden_splits(values, rows, 2))
    variables = []
    shares = []
    for position, (token, seen) in enumerate(zip(places, values, strict=False)):
        top = sorted(seen, key=lambda v: (-seen[v], v))[:EXAMPLE_VALUES]
        variable: dict[str, object] = {
            "variable": position + 1,
            "token": token,
            "values": top,
            "counts": [seen[v] for v in top],
            "distinct": len(seen),
        }
        if position in suspect:
            shares.append(max(seen.values()) / total)
            variable["warning"] = (
                f"{len(seen)} values that each recur with their own structure: maybe"
                f" {len(seen)} different failures"
            )
        variables.append(variable)
    return {"variables": variables, **purity_of(shares)}


_SEPARATORS = r"[\s,;=()\[\]{}|:.!?\"'`]*?"
_BESIDE = r"[\s,;=()\[\]{}|:.!?]*"


def raw_template(template: str, raw: str) -> str | None:
    """`template` written as `raw` (one member's original text) writes it: its punctuation
    and blanks kept, each variable's text replaced by the placeholder; None when `raw` does
    not read against it. `raw_pattern` turns the answer into an expression that matches the
    raw text of the members."""
    read = _raw_read(template, raw)
    if read is None:
        return None
    match, variables = read
    out = []
    at = 0
    for group, token in enumerate(variables, start=1):
        begin, finish = match.span(group)
        if begin < 0:
            continue
        out.append(raw[at:begin] + (WILDCARD if token == WILDCARD + HEAD_MARK else token))
        at = finish
    out.append(raw[at:])
    return "".join(out)


def raw_values(template: str, raw: str) -> list[str] | None:
    """What each variable of `template` holds in `raw`, as written there (a typed place's
    real value, not its mask); None when `raw` does not read against it."""
    read = _raw_read(template, raw)
    return None if read is None else list(read[0].groups(default=""))


def _raw_read(template: str, raw: str) -> tuple[re.Match[str], list[str]] | None:
    tokens = [t for t in template.split(CONTEXT_SEPARATOR, 1)[0].split(" ") if t]
    if not tokens:
        return None
    expression = ""
    after = ""
    for token in tokens:
        if token in PLACEHOLDERS:
            # Quotes around a value are the value's; the blanks and marks beside it are not.
            expression += _BESIDE + "(.*?)"
            after = _BESIDE
            continue
        expression += (after or _SEPARATORS) if expression else ""
        expression += r"(\S+?):" if token == WILDCARD + HEAD_MARK else re.escape(token)
        after = ""
    end = r"[\s.!?:;,)\]}]*$" if after else r"[\s.!?:;,)\]}\"'`]*$"
    match = re.match(r"^\s*" + expression + end, raw, re.DOTALL)
    if match is None:
        return None
    return match, [t for t in tokens if t in PLACEHOLDERS or t == WILDCARD + HEAD_MARK]


def raw_pattern(raw: str) -> re.Pattern[str]:
    """A regular expression matching the raw texts of `raw_template`'s answer."""
    pieces = re.split("(" + "|".join(re.escape(p) for p in sorted(PLACEHOLDERS)) + ")", raw)
    return re.compile(
        "^" + "".join(".*?" if p in PLACEHOLDERS else re.escape(p) for p in pieces) + "$",
        re.DOTALL,
    )
