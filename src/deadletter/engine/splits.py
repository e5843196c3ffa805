"""A stored failure pattern split by hand at one of its variable positions: one pattern per
value its members hold there, that value a constant of the new pattern's template.

The analysis cuts a place whose few values each recur (pipeline/purity.py) and flags one it
had too few messages to cut; a reader who sees two failures in one place (`cannot combine
<*> and <*>` holding two formats) cuts it here. Each member's value is read from its dead
letter's error against the template, as a canary's draw reads it (`canary.read_text`); the
members the template does not read, and those no longer in the DLQ, stay in the pattern split,
which then remains with them. The new patterns record where they came from (`split`), and
raise no alert: they are the old failures, named more finely.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from deadletter.domain import errors
from deadletter.domain.model import MAX_PATTERNS, DeadLetterFilter
from deadletter.domain.patterns import purity_of
from deadletter.domain.provenance import Provenance
from deadletter.engine.canary import read_text, template_of
from deadletter.engine.lookups import require_queue
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction

# A place with more values than this is a variable, not a handful of failures.
MAX_PARTS = 50
# Member ids one statement reads.
READ_BATCH = 1000
SAMPLES = 5  # as the analysis's `sample_message_ids`
EXAMPLE_VALUES = 3  # as the analysis's `variables`
CONTEXT = " :: "


@dataclass(frozen=True)
class Split:
    """What a split did: the new patterns, and how many members stayed in the old one."""

    pattern_id: str
    position: int
    patterns: list[dict[str, Any]]
    unread: int


def split(
    tx: Transaction,
    pending: Pending,
    project: str,
    dlq: str,
    *,
    pattern_id: str,
    position: int,
    now: float,
    dry_run: bool = False,
) -> Split:
    """Replace the stored pattern `pattern_id` by one pattern per value its members hold at
    variable `position` (from 1, as the pattern's `variables` number them); with `dry_run`,
    only say what the split would make, writing nothing."""
    require_queue(tx, project, dlq, lock=True)
    stored = tx.get_patterns(project, dlq)
    old = next((p for p in stored if p.get("id") == pattern_id), None)
    if old is None:
        raise errors.PatternNotFound(f"No stored pattern {pattern_id!r}.")
    template = old.get("template")
    places = _places(template)
    if not places:
        raise errors.InvalidInput(f"Pattern {pattern_id} has no variable position to split at.")
    if not 1 <= position <= len(places):
        raise errors.InvalidInput(
            f"position must be a variable position of pattern {pattern_id}: 1 to {len(places)}."
        )
    assert isinstance(template, str)
    members = [str(m) for m in old.get("message_ids") or []]
    read = _read(tx, project, dlq, members, template=template, now=now)
    parts: dict[str, list[tuple[str, Provenance, tuple[str, ...]]]] = {}
    for mid, (provenance, values) in read.items():
        parts.setdefault(values[position - 1], []).append((mid, provenance, values))
    _check(pattern_id, position, parts)
    at = _iso(now)
    record = {"from": pattern_id, "position": position, "template": template, "at": at}
    signature = str(old.get("signature") or "")
    tokens = [template.split(CONTEXT, 1)[0].split(" ")[i] for i in places]
    made = [
        _pattern(old, _filled(template, places[position - 1], value), signature, rows,
                 tokens=tokens, skip=position - 1, record={**record, "value": value})
        for value, rows in sorted(parts.items())
    ]  # fmt: skip
    rest = [m for m in members if m not in read]
    if dry_run:
        return Split(pattern_id, position, made, len(rest))
    kept = [p for p in stored if p.get("id") != pattern_id]
    if rest:
        kept.append({**old, "count": len(rest), "message_ids": rest,
                     "split_into": [p["id"] for p in made], "split_at": at})  # fmt: skip
    merged = _merged(kept, made)
    if len(merged) > MAX_PATTERNS:
        raise errors.InvalidInput(f"A queue may store at most {MAX_PATTERNS} patterns.")
    tx.save_patterns(project, dlq, merged)
    stored_count = len(merged)
    pending.calls.append(lambda lst: lst.patterns_stored(project, dlq, stored_count))
    return Split(pattern_id, position, made, len(rest))


def _check(pattern_id: str, position: int, parts: dict[str, Any]) -> None:
    """Conflict unless the position holds between two and MAX_PARTS values."""
    if not parts:
        raise errors.Conflict(
            f"No member of pattern {pattern_id} could be read against its template (they left"
            " the DLQ, or their errors no longer read as it): nothing to split."
        )
    if len(parts) == 1:
        (value,) = parts
        raise errors.Conflict(
            f"Every member of pattern {pattern_id} holds {value!r} at position {position}:"
            " nothing to split."
        )
    if len(parts) > MAX_PARTS:
        raise errors.Conflict(
            f"Position {position} of pattern {pattern_id} holds {len(parts)} values: a variable,"
            f" not a few failures (a split makes at most {MAX_PARTS} patterns)."
        )


def _places(template: Any) -> list[int]:
    """The indexes, among the head's blank-separated tokens, of its variable positions (the
    tokens `template_of` reads as variables)."""
    if not isinstance(template, str):
        return []
    head = template.split(CONTEXT, 1)[0].split(" ")
    return [i for i, token in enumerate(head) if template_of(token) == (None,)]


def _filled(template: str, index: int, value: str) -> str:
    """`template` with the token at `index` of its head written as `value` (a program name
    keeps its mark: `<*>:` filled with `crond` is `crond:`)."""
    head, sep, context = template.partition(CONTEXT)
    tokens = head.split(" ")
    token = tokens[index]
    filled = value + ":" if token.endswith(":") and value else value
    tokens[index : index + 1] = filled.split(" ") if filled else []
    return " ".join(tokens) + sep + context


def _read(
    tx: Transaction, project: str, dlq: str, members: list[str], *, template: str, now: float
) -> dict[str, tuple[Provenance, tuple[str, ...]]]:
    """Each member still in the DLQ whose error the template reads: its provenance and its
    values at the variable positions."""
    shape = template_of(template)
    max_seq = tx.max_seq(project, dlq)
    out: dict[str, tuple[Provenance, tuple[str, ...]]] = {}
    for start in range(0, len(members), READ_BATCH):
        ids = tuple(members[start : start + READ_BATCH])
        rows = tx.dead_letter_provenances(
            project, dlq, now=now, where=DeadLetterFilter(message_ids=ids).for_store(),
            max_seq=max_seq, limit=len(ids), after_seq=0,
        )  # fmt: skip
        for mid, _, provenance in rows:
            if provenance is None:
                continue
            values = read_text(provenance.error or provenance.description or "", shape)
            if values is not None:
                out[mid] = (provenance, values)
    return out


def _pattern(
    old: dict[str, Any],
    template: str,
    signature: str,
    rows: Sequence[tuple[str, Provenance, tuple[str, ...]]],
    *,
    tokens: list[str],
    skip: int,
    record: dict[str, Any],
) -> dict[str, Any]:
    """One part as the analysis would store it: its id from its template and signature, its
    members, when and whence they came, and its other positions' values."""
    ids = [mid for mid, _, _ in rows]
    times = [p.dead_lettered_at for _, p, _ in rows]
    hours: dict[str, int] = {}
    for t in times:
        hour = _iso(t // 3600 * 3600)
        hours[hour] = hours.get(hour, 0) + 1
    digest = hashlib.sha256(f"{template}\n{signature}".encode()).hexdigest()
    part: dict[str, Any] = {
        "id": f"p-{digest[:12]}",
        "template": template,
        "signature": old.get("signature"),
        "count": len(ids),
        "message_ids": ids,
        "sample_message_ids": sorted(ids)[:SAMPLES],
        "first_seen": _iso(min(times)),
        "last_seen": _iso(max(times)),
        "hourly_counts": [[h, hours[h]] for h in sorted(hours)],
        "source_queues": sorted({p.source_queue for _, p, _ in rows}),
        "reasons": sorted({p.reason.value for _, p, _ in rows}),
        "variables": _variables(old, rows, tokens, skip),
        "split": record,
    }
    # How sure the part is, as the analysis measures a pattern (`pipeline.purity.explain`).
    part.update(purity_of(v["counts"][0] / len(ids) for v in part["variables"] if "warning" in v))
    return part


def _variables(
    old: dict[str, Any],
    rows: Sequence[tuple[str, Provenance, tuple[str, ...]]],
    tokens: list[str],
    skip: int,
) -> list[dict[str, Any]]:
    """The part's variables: the old pattern's but the one split at, renumbered, with the
    values the part's members hold there (as written in their errors) and the old warning
    where they still hold more than one."""
    before = {v.get("variable"): v for v in old.get("variables") or [] if isinstance(v, dict)}
    out: list[dict[str, Any]] = []
    for i in (i for i in range(len(tokens)) if i != skip):
        seen: dict[str, int] = {}
        for _, _, values in rows:
            seen[values[i]] = seen.get(values[i], 0) + 1
        top = sorted(seen, key=lambda v: (-seen[v], v))[:EXAMPLE_VALUES]
        was = before.get(i + 1) or {}
        variable: dict[str, Any] = {
            "variable": len(out) + 1,
            "token": tokens[i],
            "values": top,
            "counts": [seen[v] for v in top],
            "distinct": len(seen),
        }
        if "warning" in was and len(seen) > 1:  # one value left: no hidden split here
            variable["warning"] = was["warning"]
        out.append(variable)
    return out


def _merged(kept: list[dict[str, Any]], made: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`kept` and `made`, a made pattern whose id is stored already joining that one."""
    by_id = {p["id"]: p for p in kept if isinstance(p.get("id"), str)}
    out = list(kept)
    for p in made:
        same = by_id.get(p["id"])
        if same is None:
            out.append(p)
            continue
        ids = [str(m) for m in same.get("message_ids") or []]
        have = set(ids)
        ids += [m for m in p["message_ids"] if m not in have]
        same["message_ids"] = ids
        same["count"] = len(ids)
    return out


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
