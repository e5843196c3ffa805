"""Pure helpers of the peers benchmark: bodies, summaries, ratios, W2 verification, tables."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

BODY_SIZE = 1024
POISON, HEALTHY = "P", "H"

# (workload, metric, unit, higher_is_better): the columns of the table, in order.
METRICS: list[tuple[str, str, str, bool]] = [
    ("w1", "produce", "msg/s", True),
    ("w1", "consume", "msg/s", True),
    ("w1", "e2e", "msg/s", True),
    ("w1", "server_cpu", "CPU s per 1k msgs", False),
    ("w1", "client_cpu", "CPU s per 1k msgs", False),
    ("w2", "e2e", "msg/s", True),
    ("w2", "server_cpu", "CPU s per 1k msgs", False),
    ("w2", "client_cpu", "CPU s per 1k msgs", False),
    ("w3", "rate", "msg/s", True),
    ("w4", "p50_ms", "ms", False),
    ("w4", "p99_ms", "ms", False),
]


def make_body(key: str, poison: bool, size: int = BODY_SIZE) -> str:
    """A body of about `size` characters that names its key and whether it is poison."""
    head = f"{key}|{POISON if poison else HEALTHY}|"
    return head + "x" * max(0, size - len(head))


def parse_body(body: str) -> tuple[str, bool]:
    key, kind, _ = body.split("|", 2)
    return key, kind == POISON


def poison_keys(n: int, ratio: float) -> set[str]:
    """Keys (0-padded indexes) of the poison messages among n, spread evenly."""
    count = round(n * ratio)
    if count <= 0:
        return set()
    step = n / count
    return {key_of(int(i * step)) for i in range(count)}


def key_of(i: int) -> str:
    return f"{i:08d}"


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100) by linear interpolation between closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float
    runs: int

    def as_dict(self) -> dict[str, float]:
        return {"median": self.median, "min": self.low, "max": self.high, "runs": self.runs}


def summarize(values: Iterable[float | None]) -> Summary | None:
    got = [v for v in values if v is not None and not math.isnan(v)]
    if not got:
        return None
    return Summary(statistics.median(got), min(got), max(got), len(got))


def ratio(value: float | None, baseline: float | None) -> float | None:
    """value / baseline, None when either is missing or the baseline is zero."""
    if value is None or baseline is None or baseline == 0:
        return None
    return value / baseline


@dataclass
class PoisonVerdict:
    """The exact outcome of a W2 run, compared with what was sent."""

    healthy_expected: int
    healthy_acked: int
    duplicates: int
    missing_healthy: int
    poison_expected: int
    poison_in_dlq: int
    poison_acked: int
    unexpected_in_dlq: int
    source_left: int
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "healthy_expected": self.healthy_expected,
            "healthy_acked": self.healthy_acked,
            "duplicates": self.duplicates,
            "missing_healthy": self.missing_healthy,
            "poison_expected": self.poison_expected,
            "poison_in_dlq": self.poison_in_dlq,
            "poison_acked": self.poison_acked,
            "unexpected_in_dlq": self.unexpected_in_dlq,
            "source_left": self.source_left,
            "problems": self.problems,
        }


def verify_poison(
    sent: Mapping[str, bool],
    acked: Sequence[str],
    dlq: Sequence[str],
    source_left: int,
) -> PoisonVerdict:
    """Check a drained W2 queue: each healthy key acknowledged once, each poison key in the DLQ.

    `sent` maps key -> is poison; `acked` lists every acknowledged key (repeats are duplicate
    deliveries); `dlq` lists the keys found in the DLQ; `source_left` is what the source holds.
    """
    acks = Counter(acked)
    healthy = {k for k, p in sent.items() if not p}
    poison = {k for k, p in sent.items() if p}
    in_dlq = set(dlq)
    duplicates = sum(c - 1 for k, c in acks.items() if k in healthy and c > 1)
    missing = len(healthy - acks.keys())
    poison_acked = len(poison & acks.keys())
    unexpected = len(in_dlq - poison)
    problems: list[str] = []
    if missing:
        problems.append(f"{missing} healthy messages never acknowledged")
    if duplicates:
        problems.append(f"{duplicates} duplicate acknowledgements of healthy messages")
    if poison - in_dlq:
        problems.append(f"{len(poison - in_dlq)} poison messages not in the DLQ")
    if poison_acked:
        problems.append(f"{poison_acked} poison messages acknowledged")
    if unexpected:
        problems.append(f"{unexpected} healthy messages in the DLQ")
    if len(dlq) != len(in_dlq):
        problems.append(f"{len(dlq) - len(in_dlq)} duplicate messages in the DLQ")
    if source_left:
        problems.append(f"source queue still holds {source_left} messages")
    return PoisonVerdict(
        healthy_expected=len(healthy),
        healthy_acked=len(healthy & acks.keys()),
        duplicates=duplicates,
        missing_healthy=missing,
        poison_expected=len(poison),
        poison_in_dlq=len(poison & in_dlq),
        poison_acked=poison_acked,
        unexpected_in_dlq=unexpected,
        source_left=source_left,
        problems=problems,
    )


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit.startswith("CPU s"):
        return f"{value:.2f}"
    if unit == "ms":
        return f"{value:.1f}" if value < 100 else f"{value:.0f}"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _cell(summary: Mapping[str, float] | None, unit: str, base: float | None) -> str:
    if not summary:
        return "—"
    med = summary["median"]
    text = f"{_fmt(med, unit)} ({_fmt(summary['min'], unit)}-{_fmt(summary['max'], unit)})"
    r = ratio(med, base)
    if r is not None:
        text += f" x{r:.2f}"
    return text


def _cell_text(note: str, limit: int = 160) -> str:
    """One line without pipes, so a note cannot break the table."""
    flat = " ".join(note.split()).replace("|", "/")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def render_table(
    summaries: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]],
    baseline: str,
    notes: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """A markdown table: one row per system, one column per metric.

    `summaries[system][workload][metric]` is a summary dict (median, min, max, runs). Each cell
    reads "median (min-max) xratio", the ratio being the median over the baseline's median.
    """
    header = ["system"] + [f"{w.upper()} {m} ({u})" for w, m, u, _ in METRICS] + ["notes"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    base = summaries.get(baseline, {})
    for system, by_workload in summaries.items():
        cells = [system]
        for workload, metric, unit, _ in METRICS:
            got = by_workload.get(workload, {}).get(metric)
            base_summary = base.get(workload, {}).get(metric)
            base_median = base_summary["median"] if base_summary else None
            cells.append(_cell(got, unit, base_median if system != baseline else None))
        cells.append("; ".join(_cell_text(n) for n in (notes or {}).get(system, [])))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def clients_key(count: int) -> str:
    """The workload key of a W1 run with `count` producers and `count` consumers."""
    return f"w1x{count}"


def render_clients_table(
    summaries: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]],
    clients: Sequence[int],
    baseline: str,
) -> str:
    """W1 end to end and server CPU at each count of clients per side, one row per system;
    each e2e cell's ratio is to the baseline's at the same count, and the last column is the
    system's own growth from the fewest clients to the most. Where a system ran on PostgreSQL,
    PostgreSQL's own CPU too, in columns of their own."""
    database = any(
        "db_cpu" in by_workload.get(clients_key(c), {})
        for by_workload in summaries.values()
        for c in clients
    )
    header = ["system"] + [f"W1 e2e, {c} per side (msg/s)" for c in clients]
    header += [f"server CPU s per 1k, {c} per side" for c in clients]
    if database:
        header += [f"PostgreSQL's CPU s per 1k, {c} per side" for c in clients]
    header += [f"growth {clients[0]} -> {clients[-1]}"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    base = summaries.get(baseline, {})
    for system, by_workload in summaries.items():
        cells = [system]
        medians: list[float | None] = []
        for c in clients:
            got = by_workload.get(clients_key(c), {}).get("e2e")
            base_summary = base.get(clients_key(c), {}).get("e2e")
            base_median = base_summary["median"] if base_summary else None
            cells.append(_cell(got, "msg/s", base_median if system != baseline else None))
            medians.append(got["median"] if got else None)
        for metric in ("server_cpu", "db_cpu") if database else ("server_cpu",):
            for c in clients:
                cpu = by_workload.get(clients_key(c), {}).get(metric)
                cells.append(_cell(cpu, "CPU s per 1k msgs", None))
        growth = ratio(medians[-1], medians[0]) if medians else None
        cells.append("—" if growth is None else f"x{growth:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
