"""The analysis in this process, without Spark, for small JSON-lines exports: starting Spark
costs seconds that a few thousand dead letters do not need. The very functions of the Spark
job (masking, mining, pattern ids, the summary), the same outputs.

The reader takes a line only when it is sure to read it as Spark's JSON reader and
`schema.to_schema` do; otherwise it raises `NotLocal` and the caller runs Spark.
"""

from __future__ import annotations

import gc
import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deadletter.pipeline import summary
from deadletter.pipeline.analysis import Result
from deadletter.pipeline.lines import _ENCODE, NotLocal, row_of_line

__all__ = [
    "NotLocal",
    "analyze_dlq",
    "analyze_local",
    "analyze_rows",
    "export_dlq",
    "read_jsonl",
    "row_of_line",
    "suits",
]
from deadletter.pipeline.mining import DEFAULT_THRESHOLD, pattern_id, with_context
from deadletter.pipeline.purity import explain

# `--engine auto` reads a JSON-lines export up to this size without Spark, and hands it to
# Spark past it: about 1.3 million dead letters, past the million at which the two were about
# even on two cores (docs/pipeline.md, "Which engine"); Spark's start decides below it, its
# cores above. `--engine local` takes any size.
AUTO_LOCAL_MAX_BYTES = 1024**3
# Processes that read and count an export's blocks (tally.py), at most: the result is the same
# with one.
LOCAL_WORKERS = 2
# Of the CPU time the machine had while this process counted its first block, the share of
# a core that must have gone unused for a second process to count beside it: it then runs
# where nothing else does. Two spend more CPU in all (a tenth more at a million dead
# letters: each masks the texts it sees first, blocks and their counts travel between them),
# which a busy machine pays for in time (docs/pipeline.md, run 17).
IDLE_FOR_A_SECOND = 0.5

CpuTimes = tuple[int, int]


def cpu_times() -> CpuTimes | None:
    """The machine's idle and total CPU time so far (/proc/stat, in clock ticks), where the
    system tells it."""
    try:
        with open("/proc/stat", "rb") as fh:
            ticks = [int(t) for t in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    if len(ticks) < 5:
        return None
    return ticks[3] + ticks[4], sum(ticks)  # idle and iowait, of user to steal


def local_workers(since: CpuTimes | None = None) -> int:
    """How many processes count the blocks: two where the machine left a core idle beside
    this process since `since` (what it measures now, this process's own work included), or
    where the load average leaves one when that cannot be measured; else this one alone."""
    cores = os.cpu_count() or 1
    if cores < 2:
        return 1
    now = cpu_times()
    if since is not None and now is not None and now[1] - since[1] >= 10 * cores:
        idle = cores * (now[0] - since[0]) / (now[1] - since[1])
        return min(LOCAL_WORKERS, cores) if idle >= IDLE_FOR_A_SECOND else 1
    try:
        spare = cores - os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this system
        return 1
    return min(LOCAL_WORKERS, cores) if spare >= 1 else 1


# A Parquet export is read whole into rows in this process, about 3 KB a dead letter: past this
# many, Spark reads it.
PARQUET_MAX_ROWS = 80_000
# A DLQ read from the server is written page by page to a JSON-lines file of its own and read
# as an export is, streamed: `--engine auto` takes a DLQ of up to this many in this process
# (about what AUTO_LOCAL_MAX_BYTES holds), `--engine local` any number.
QUEUE_MAX_ROWS = 1_000_000


def suits(path: Path, *, any_size: bool = False) -> bool:
    """An export the in-process path takes (`any_size`: as `--engine local` does; else as
    `--engine auto` does: JSON lines up to AUTO_LOCAL_MAX_BYTES, or Parquet, told by its first
    bytes, of up to PARQUET_MAX_ROWS dead letters, which it holds as rows)."""
    try:
        from deadletter.pipeline.exports import is_parquet, parquet_rows
    except ImportError:  # no pyarrow: the engine then says which extra it needs
        return path.is_file() and (any_size or path.stat().st_size <= AUTO_LOCAL_MAX_BYTES)
    if is_parquet(path):
        try:
            return any_size or parquet_rows(path) <= PARQUET_MAX_ROWS
        except (OSError, ValueError):
            return False  # Spark says what is wrong with it
    return path.is_file() and (any_size or path.stat().st_size <= AUTO_LOCAL_MAX_BYTES)


def read_parquet(path: Path) -> list[dict[str, Any]]:
    """Every dead letter of a Parquet export, in SCHEMA, or NotLocal (a column of another
    type, a message id missing, twice or with control characters: Spark reads those)."""
    from deadletter.pipeline.exports import NotExport, read_rows

    try:
        rows = read_rows(path)
    except NotExport as exc:
        raise NotLocal(f"a Parquet file whose {exc}") from exc
    if any(any(ord(c) < 0x20 for c in r["message_id"] or "") for r in rows):
        raise NotLocal("a message id that holds control characters")
    return _unique(rows)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every dead letter of a JSON-lines export, in SCHEMA, or NotLocal."""
    rows = []
    number = 0
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                number += 1
                line = line.rstrip("\r\n")
                if line:
                    rows.append(row_of_line(line))
    except NotLocal as exc:
        raise NotLocal(f"line {number} holds {exc}") from exc
    except UnicodeDecodeError as exc:
        # Spark reads such bytes as replacement characters.
        raise NotLocal(f"bytes that are not UTF-8 after line {number}") from exc
    return _unique(rows)


def _unique(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows`, when every one has a message id of its own (a pattern's example is found by
    it); else NotLocal."""
    seen: set[str] = set()
    for row in rows:
        mid = row["message_id"]
        if mid is None or mid in seen:
            raise NotLocal(f"message id {mid!r} missing or twice")
        seen.add(mid)
    return rows


def export_dlq(options: dict[str, str], path: Path, max_rows: int | None = QUEUE_MAX_ROWS) -> int:
    """Every dead letter of a DLQ (the data source's options: url, queue, project, key_id,
    secret, filter) written to `path` as `deadletter dlq export` writes them, page by page;
    how many. NotLocal past `max_rows` (None: no limit), before a page is read when the
    server's count already says so."""
    from deadletter.client.records import export_record
    from deadletter.pipeline.messages import client_of, filter_option

    where = filter_option(options)
    count = 0
    with client_of(options) as client, path.open("w", encoding="utf-8") as fh:
        if max_rows is not None:
            total = _total(client, options["queue"], where)
            if isinstance(total, int) and total > max_rows:
                holds = "the filter selects" if where else "the DLQ holds"
                raise NotLocal(f"{holds} {total:,} messages, more than {max_rows:,}")
        for message in client.dead_letters(options["queue"], 1000, **where):
            if count == max_rows:
                raise NotLocal(f"the DLQ holds more than {max_rows:,} dead letters")
            # A body's JSON as the data source hands it to Spark (`messages.row_of`), so that
            # both engines see the same text.
            fh.write(json.dumps(export_record(message), separators=(",", ":")) + "\n")
            count += 1
    return count


def analyze_dlq(
    options: dict[str, str],
    out_dir: str | Path,
    *,
    max_rows: int | None = QUEUE_MAX_ROWS,
    threshold: float = DEFAULT_THRESHOLD,
    post: Callable[[list[dict[str, Any]]], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Result:
    """`analyze_local` of a DLQ (the data source's options): written to an export of its own
    in a temporary folder (`export_dlq`), so that it is read as a stream, as an export is."""
    with tempfile.TemporaryDirectory(prefix="deadletter-analyze-") as work:
        copy = Path(work) / "dlq.jsonl"
        count = export_dlq(options, copy, max_rows)
        if progress is not None:
            progress(f"{count:,} dead letters read")
        return analyze_local(copy, out_dir, threshold=threshold, post=post, progress=progress)


def _total(client: Any, queue: str, where: dict[str, list[str]]) -> Any:
    """The DLQ's message count (what the filter selects, with one), when the server gives
    it: it spares reading most of a DLQ only to hand it to Spark; the count of rows read is
    what decides. A filter the server refuses ends the read here."""
    from deadletter.client import ApiError

    try:
        if where:
            return client.count_dead_letters(queue, **where)
        return client.stats(queue)["messages"]["total"]
    except (ApiError, KeyError, TypeError) as exc:
        if isinstance(exc, ApiError) and exc.status == 400:
            raise
        return None


def analyze_local(
    path: Path,
    out_dir: str | Path,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    keep_assignments: bool = False,
    post: Callable[[list[dict[str, Any]]], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Result:
    """`analysis.analyze` of an export, in this process: the same patterns.json,
    patterns.parquet, report.html and assignments (in input order). A JSON-lines export is
    read block by block (reader.py) and counted as it goes (tally.py): memory holds one block,
    the distinct masked texts and groups, and each dead letter's message id. A Parquet export
    (told by its first bytes) is read whole into rows (`read_parquet`)."""
    from deadletter.pipeline.exports import is_parquet
    from deadletter.pipeline.local_summary import summarise
    from deadletter.pipeline.tally import Tally, counted_blocks

    say = progress or (lambda _stage: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say("reading and masking the dead letters")
    if is_parquet(Path(path)):
        rows = read_parquet(Path(path))
        return analyze_rows(
            rows, out, threshold=threshold, keep_assignments=keep_assignments, post=post, say=say
        )
    tally = Tally()
    since = cpu_times()

    def workers() -> int:
        count = local_workers(since)
        if count > 1:
            say(f"reading and masking in {count} processes (a core was idle)")
        return count

    # Without the cyclic garbage collector meanwhile: the reading makes millions of objects
    # that hold no cycle, and each collection would walk every one still alive.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for counted in counted_blocks(Path(path), workers, tally.starts):
            tally.add(counted)
        return summarise(
            tally,
            Path(path),
            out,
            threshold=threshold,
            keep_assignments=keep_assignments,
            post=post,
            say=say,
        )
    finally:
        if collecting:
            gc.enable()


def analyze_rows(
    rows: list[dict[str, Any]],
    out_dir: str | Path,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    keep_assignments: bool = False,
    post: Callable[[list[dict[str, Any]]], None] | None = None,
    say: Callable[[str], None] = lambda _stage: None,
) -> Result:
    """The analysis of dead letters already read (dicts in SCHEMA, message ids unique)."""
    from deadletter.pipeline.masking import masked_rows
    from deadletter.pipeline.shape import key_paths_of_shape, shape_of

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    masked = masked_rows(
        [r["error"] for r in rows],
        [r["description"] for r in rows],
        [r["error_class"] for r in rows],
    )
    pairs = [(tokens, context) for _signature, tokens, context in masked]
    signatures = [signature for signature, _tokens, _context in masked]
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for pair in pairs:
        counts[pair] += 1
    say(f"{len(rows):,} dead letters masked; mining templates")
    found = with_context(((t, c, n) for (t, c), n in counts.items()), threshold)
    ids: dict[tuple[str, str], str] = {}
    assigned = []
    groups: dict[tuple[Any, ...], list[Any]] = {}
    members: dict[str, list[str]] = defaultdict(list)
    for row, pair, signature in zip(rows, pairs, signatures, strict=True):
        template = found[pair]
        pid = ids.get((template, signature))
        if pid is None:
            pid = ids[(template, signature)] = pattern_id(template, signature)
        assigned.append((row["message_id"], pid))
        members[pid].append(row["message_id"])
        at = row["dead_lettered_at"]
        hour = at.replace(minute=0, second=0, microsecond=0) if at is not None else None
        # By body shape, as the Spark job groups: key paths once per shape, fewer groups.
        shape = shape_of(row["body"])
        key = (pid, template, signature, row["source_queue"], row["reason"], hour, shape)
        group = groups.get(key)
        if group is None:
            groups[key] = [1, at, at]
        else:
            group[0] += 1
            if at is not None:
                group[1] = at if group[1] is None else min(group[1], at)
                group[2] = at if group[2] is None else max(group[2], at)
    say("summarising the patterns")
    folded = summary.Folded((*key, *figures) for key, figures in groups.items())
    for ids_of in members.values():
        ids_of.sort()
    samples = {pid: ids_of[: summary.SAMPLES] for pid, ids_of in members.items()}
    by_id = {row["message_id"]: row for row in rows}
    examples = {pid: summary.example_of(by_id[ids_of[0]]) for pid, ids_of in samples.items()}
    shapes = summary.shape_findings(folded.shaped, folded.base, key_paths_of_shape)
    attrs = summary.attribute_findings(_attribute_candidates(rows, assigned), folded.sizes())
    variables = explain(found, ((t, c, n) for (t, c), n in counts.items()))
    patterns = summary.assemble(folded, samples, examples, shapes, attrs, variables)
    say(f"{len(patterns):,} patterns; writing the assignments")
    _write_assignments(assigned, out)
    total = summary.write_summary(patterns, out)
    if post is not None:
        say("storing the patterns on the server")
        post([{**p, "message_ids": members.get(p["id"], [])} for p in patterns])
    return Result(out, total, patterns, dict(assigned) if keep_assignments else {})


def _attribute_candidates(
    rows: list[dict[str, Any]], assigned: list[tuple[str, str]]
) -> list[tuple[str, str, str, int, int]]:
    """(pattern, name, value, n, corpus count) where n reaches LIFT_MIN_SHARE of the pattern,
    as analysis._attribute_findings collects them."""
    n_of: dict[tuple[str, str, str], int] = defaultdict(int)
    size: dict[str, int] = defaultdict(int)
    for row, (_mid, pid) in zip(rows, assigned, strict=True):
        size[pid] += 1
        for key, value in (row["attributes"] or {}).items():
            if value is not None:
                n_of[(pid, key, value)] += 1
    corpus: dict[tuple[str, str], int] = defaultdict(int)
    for (_pid, key, value), n in n_of.items():
        corpus[(key, value)] += n
    return [
        (pid, key, value, n, corpus[(key, value)])
        for (pid, key, value), n in n_of.items()
        if n >= size[pid] * summary.LIFT_MIN_SHARE
    ]


def _write_assignments(assigned: list[tuple[str, str]], out: Path) -> None:
    """assignments.jsonl as Spark's JSON writer writes it, and the Parquet folder."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    # As json.dumps(..., ensure_ascii=False, separators=(",", ":")) writes each line.
    with (out / "assignments.jsonl").open("wb") as fh:
        fh.writelines(
            _ENCODE({"message_id": mid, "pattern_id": pid}) + b"\n" for mid, pid in assigned
        )
    folder = out / "assignments.parquet"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    table = pa.table(
        {"message_id": [m for m, _ in assigned], "pattern_id": [p for _, p in assigned]},
        schema=pa.schema([("message_id", pa.string()), ("pattern_id", pa.string())]),
    )
    pq.write_table(table, folder / "part-00000.parquet")
    (folder / "_SUCCESS").touch()
