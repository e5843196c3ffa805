"""What a pattern's summary is made of, from counted groups: plain Python shared by the Spark
job (`analysis`) and the in-process path (`local`), so both write the same patterns."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from deadletter.pipeline.columns import iso

SAMPLES = 5
MISSING_BASELINE = 0.5  # a key path "usually there" is in half the pattern's queues' messages
LIFT_MIN_SHARE = 0.5  # an attribute value must mark at least half of a pattern
LIFT_MIN = 1.5
MAX_ATTRIBUTE_FINDINGS = 5

# One counted group: (pattern_id, template, signature, source_queue, reason, hour, body key,
# count, first_seen, last_seen); the body key is what `paths_of` turns into key paths.
Group = tuple[str, Any, Any, Any, Any, Any, Any, int, Any, Any]


class Folded:
    """The per-pattern figures of the counted groups."""

    def __init__(self, groups: Iterable[Group]) -> None:
        self.base: dict[str, dict[str, Any]] = {}
        self.hourly: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.shaped: list[tuple[str, Any, Any, int]] = []
        for pid, template, signature, queue, reason, hour, shape, n, first, last in groups:
            b = self.base.setdefault(
                pid,
                {
                    "count": 0,
                    "template": template,
                    "signature": signature,
                    "source_queues": set(),
                    "reasons": set(),
                    "first_seen": None,
                    "last_seen": None,
                },
            )
            b["count"] += n
            b["source_queues"].add(queue)
            b["reasons"].add(reason)
            for key, value, pick in (("first_seen", first, min), ("last_seen", last, max)):
                if value is not None:
                    b[key] = value if b[key] is None else pick(b[key], value)
            if hour is not None:
                self.hourly[pid][iso(hour)] += n
            self.shaped.append((pid, queue, shape, n))

    def sizes(self) -> dict[str, int]:
        return {pid: b["count"] for pid, b in self.base.items()}


def example_of(row: Any) -> dict[str, Any]:
    """A whole dead letter as the report shows it (`row` is a Spark Row or a dict)."""
    return {
        "message_id": row["message_id"],
        "source_queue": row["source_queue"],
        "reason": row["reason"],
        "description": row["description"],
        "error": row["error"],
        "dead_lettered_at": iso(row["dead_lettered_at"]),
        "claim_count": row["claim_count"],
        "body": row["body"],
        # By name: Spark hands a map back in hash order, which says nothing.
        "attributes": dict(sorted((row["attributes"] or {}).items())),
        "enqueued_at": iso(row["enqueued_at"]),
        # Only where the consumer gave it, so that other examples read as they always have.
        **({"error_class": row["error_class"]} if row["error_class"] is not None else {}),
    }


def shape_findings(
    shaped: list[tuple[str, Any, Any, int]],
    base: dict[str, dict[str, Any]],
    paths_of_key: Callable[[Any], list[str]],
) -> dict[str, dict[str, list[str]]]:
    """Key paths every message of a pattern has, and those present in at least half of the
    dead letters of the pattern's source queues but in none of the pattern's own, from
    (pattern, queue, body key, count) rows."""
    per_queue_total: dict[Any, int] = defaultdict(int)
    per_pattern_queue: dict[tuple[str, Any], int] = defaultdict(int)
    path_in_queue: dict[tuple[Any, str], int] = defaultdict(int)
    path_in_pattern: dict[tuple[str, str], int] = defaultdict(int)
    paths_of: dict[Any, list[str]] = {}
    for pid, q, shape, n in shaped:
        per_queue_total[q] += n
        per_pattern_queue[(pid, q)] += n
        if shape not in paths_of:
            paths_of[shape] = paths_of_key(shape)
        for path in paths_of[shape]:
            path_in_queue[(q, path)] += n
            path_in_pattern[(pid, path)] += n
    queue_paths: dict[Any, set[str]] = defaultdict(set)
    for q, path in path_in_queue:
        queue_paths[q].add(path)

    out: dict[str, dict[str, list[str]]] = {}
    for pid, row in base.items():
        n = row["count"]
        queues = [q for (p, q) in per_pattern_queue if p == pid]
        in_all = sorted(path for (p, path), c in path_in_pattern.items() if p == pid and c == n)
        baseline_n = sum(per_queue_total[q] for q in queues)
        missing: list[str] = []
        if baseline_n > 0:
            candidates = set().union(*(queue_paths[q] for q in queues)) if queues else set()
            for path in sorted(candidates):
                if path_in_pattern.get((pid, path), 0):
                    continue
                in_baseline = sum(path_in_queue.get((q, path), 0) for q in queues)
                if in_baseline / baseline_n >= MISSING_BASELINE:
                    missing.append(path)
        out[pid] = {"in_all": in_all, "missing": missing}
    return out


def attribute_findings(
    candidates: Iterable[tuple[str, str, str, int, int]], sizes: dict[str, int]
) -> dict[str, list[dict[str, Any]]]:
    """From (pattern, name, value, n, corpus count) rows whose n reaches LIFT_MIN_SHARE of
    the pattern: the values with lift >= LIFT_MIN, highest lift first, at most
    MAX_ATTRIBUTE_FINDINGS per pattern."""
    total = sum(sizes.values())
    found_all = []
    for pid, key, value, n, corpus_count in candidates:
        share = n / sizes[pid]
        lift = share / (corpus_count / total)
        if lift >= LIFT_MIN:
            found_all.append((pid, -lift, key, value, share, corpus_count))
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pid, neg_lift, key, value, share, corpus_count in sorted(found_all):
        found = out[pid]
        if len(found) < MAX_ATTRIBUTE_FINDINGS:
            found.append(
                {
                    "name": key,
                    "value": value,
                    "share": round(share, 4),
                    "corpus_share": round(corpus_count / total, 4),
                    "lift": round(-neg_lift, 2),
                }
            )
    return out


def assemble(
    folded: Folded,
    samples: dict[str, list[str]],
    examples: dict[str, dict[str, Any]],
    shapes: dict[str, dict[str, list[str]]],
    attrs: dict[str, list[dict[str, Any]]],
    explained: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One JSON-ready dict per pattern, largest first (ties by id); `explained` by template
    (purity.explain: its variables, purity and impure flag)."""
    patterns = []
    for pid, r in folded.base.items():
        shape = shapes.get(pid, {})
        sure = (explained or {}).get(r["template"] or "") or {}
        patterns.append(
            {
                "id": pid,
                "template": r["template"] or "",
                "raw_template": _written(r["template"] or "", examples.get(pid)),
                "variables": _with_examples(
                    sure.get("variables", []), r["template"] or "", examples.get(pid)
                ),
                "purity": sure.get("purity", 1.0),
                "impure": sure.get("impure", False),
                "signature": r["signature"] or "",
                "count": r["count"],
                "source_queues": sorted(q for q in r["source_queues"] if q is not None),
                "reasons": sorted(q for q in r["reasons"] if q is not None),
                "first_seen": iso(r["first_seen"]),
                "last_seen": iso(r["last_seen"]),
                "hourly_counts": [[h, c] for h, c in sorted(folded.hourly[pid].items())],
                "sample_message_ids": samples.get(pid, []),
                "example": examples.get(pid),
                "key_paths_in_all": shape.get("in_all", []),
                "key_paths_missing": shape.get("missing", []),
                "overrepresented_attributes": attrs.get(pid, []),
            }
        )
    patterns.sort(key=lambda p: (-p["count"], p["id"]))
    return patterns


def _headline(example: dict[str, Any]) -> str:
    from deadletter.pipeline.text import mining_parts

    return mining_parts(
        example.get("error"), example.get("description"), example.get("error_class")
    )[1]


def _with_examples(
    variables: list[dict[str, Any]], template: str, example: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Each variable with `example`, its value as the pattern's example writes it (a typed
    place's real value, where `values` shows masks), when the example reads back."""
    from deadletter.pipeline.purity import CONTEXT_SEPARATOR, raw_values

    if not variables or not template or not example:
        return variables
    found = raw_values(template.split(CONTEXT_SEPARATOR, 1)[0], _headline(example))
    if found is None or len(found) != len(variables):
        return variables
    return [{**v, "example": value} for v, value in zip(variables, found, strict=True)]


def _written(template: str, example: dict[str, Any] | None) -> str | None:
    """The template as the example's text writes it, punctuation kept (purity.raw_template):
    it matches the members' raw text, where the template matches their masked tokens."""
    from deadletter.pipeline.purity import CONTEXT_SEPARATOR, raw_pattern, raw_template

    if not template or not example:
        return None
    headline = _headline(example)
    written = raw_template(template.split(CONTEXT_SEPARATOR, 1)[0], headline)
    # Kept only when it reads its own example back.
    return written if written and raw_pattern(written).match(headline) else None


def write_summary(patterns: list[dict[str, Any]], out: Path) -> int:
    """patterns.json, patterns.parquet and report.html; the number of dead letters."""
    from deadletter.pipeline.outputs import write_patterns
    from deadletter.pipeline.report import render

    total: int = sum(p["count"] for p in patterns)
    (out / "patterns.json").write_text(
        json.dumps({"total": total, "patterns": patterns}, indent=2) + "\n"
    )
    write_patterns(patterns, out / "patterns.parquet")
    (out / "report.html").write_text(render(patterns, total))
    return total
