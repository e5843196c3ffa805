"""The analysis in this process, without Spark, for small JSON-lines exports: starting Spark
costs seconds that a few thousand dead letters do not need. The very functions of the Spark
job (masking, mining, pattern ids, the summary), the same outputs.

The reader takes a line only when it is sure to read it as Spark's JSON reader and
`schema.to_schema` do; otherwise it raises `NotLocal` and the caller runs Spark.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from deadletter.pipeline import summary
from deadletter.pipeline.analysis import Result
from deadletter.pipeline.columns import COLUMNS
from deadletter.pipeline.mining import DEFAULT_THRESHOLD, pattern_id, with_context
from deadletter.pipeline.purity import explain

# Above this size an export goes to Spark: by then its parallel masking has paid for its
# start (docs/pipeline.md, "Small inputs").
LOCAL_MAX_BYTES = 64 * 1024 * 1024
# The same for a DLQ read from the server, whose size shows only while reading: about the
# dead letters of such a file. Memory grows by about 3 KB per dead letter (3 GB at a million).
LOCAL_MAX_ROWS = 80_000

_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})?")
_TEXT_COLUMNS = ("message_id", "source_queue", "reason", "description", "error", "error_class")
_INT32 = 2**31
_DECODE = msgspec.json.Decoder().decode
_ENCODE = msgspec.json.Encoder().encode
_CONTROL = re.compile(r"[\x00-\x1f]")
# The ways `deadletter dlq export` and the corpus generator write a nested body.
_DUMPS = [
    {"separators": seps, "ensure_ascii": ascii_only}
    for seps in ((", ", ": "), (",", ":"))
    for ascii_only in (False, True)
]


_COMPACT_FIRST = sorted(_DUMPS, key=lambda o: o["separators"] != (",", ":"))


def _decoded(line: str) -> Any:
    """json.loads's answer, by msgspec's faster decoder where it reads the line (it refuses
    what standard JSON refuses, NaN say, which json.loads then reads as before)."""
    try:
        return _DECODE(line)
    except msgspec.DecodeError:
        return json.loads(line)


class NotLocal(ValueError):
    """The export holds a line that only Spark's reader is sure to read as Spark does."""


def suits(path: Path, *, any_size: bool = False) -> bool:
    """An export for the in-process path: JSON lines up to LOCAL_MAX_BYTES, or Parquet (told
    by its first bytes) of up to LOCAL_MAX_ROWS dead letters; with `any_size`, any export."""
    try:
        from deadletter.pipeline.exports import is_parquet, parquet_rows
    except ImportError:  # no pyarrow: the engine then says which extra it needs
        return path.is_file() and (any_size or path.stat().st_size <= LOCAL_MAX_BYTES)
    if is_parquet(path):
        try:
            return any_size or parquet_rows(path) <= LOCAL_MAX_ROWS
        except (OSError, ValueError):
            return False  # Spark says what is wrong with it
    return path.is_file() and (any_size or path.stat().st_size <= LOCAL_MAX_BYTES)


def _time(value: Any) -> datetime | None:
    """A time as Spark's to_timestamp reads it in a UTC session: naive, UTC, microseconds."""
    if value is None:
        return None
    if not isinstance(value, str) or not _TIME.fullmatch(value):
        raise NotLocal(f"a time Spark may read otherwise: {value!r}")
    # The expression above is ISO 8601 only: parse_time's reading as epoch seconds is moot.
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        return parsed
    return parsed.astimezone(UTC).replace(tzinfo=None)


def _body(value: Any, line: str) -> str | None:
    """The body's text; a nested JSON body is the text of the line itself, as Spark keeps it."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        # The export's own separators first: most bodies are found on the first try.
        compact = '"body":{' in line or '"body":[' in line
        if compact:
            # msgspec writes as the export does, much faster; the text is the line's own
            # when it is found there.
            text = _ENCODE(value).decode()
            if f'"body":{text}' in line:
                return text
        for options in _COMPACT_FIRST if compact else _DUMPS:
            text = json.dumps(value, **options)  # type: ignore[arg-type]
            if f'"body": {text}' in line or f'"body":{text}' in line:
                return text
    raise NotLocal("a body whose text Spark may keep otherwise")


def _attribute(value: Any) -> str | None:
    """An attribute's value as to_schema reads it: a `{"type","value"}` object's value."""
    if value is None:
        return None
    if isinstance(value, str) and not value.startswith(("{", "[")):
        return value
    if isinstance(value, dict) and set(value) <= {"type", "value"}:
        found = value.get("value")
        if isinstance(found, str):
            return found
    raise NotLocal(f"an attribute value Spark may read otherwise: {value!r}")


def row_of_line(line: str) -> dict[str, Any]:
    """One export line as a row in SCHEMA, or NotLocal."""
    try:
        record = _decoded(line)
    except ValueError as exc:
        raise NotLocal("a line that is not JSON") from exc
    if not isinstance(record, dict):
        raise NotLocal("a line that is not a JSON object")
    row: dict[str, Any] = {}
    for name in _TEXT_COLUMNS:
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            raise NotLocal(f"a {name} that is not text")
        row[name] = value
    mid = row["message_id"]
    if mid is None or _CONTROL.search(mid):
        raise NotLocal("a message id that is missing or holds control characters")
    count = record.get("claim_count")
    if count is not None and (type(count) is not int or not -_INT32 <= count < _INT32):
        raise NotLocal(f"a claim count Spark reads otherwise: {count!r}")
    row["claim_count"] = count
    row["dead_lettered_at"] = _time(record.get("dead_lettered_at"))
    row["enqueued_at"] = _time(record.get("enqueued_at"))
    row["body"] = _body(record.get("body"), line)
    attributes = record.get("attributes")
    if attributes is not None and not isinstance(attributes, dict):
        raise NotLocal("attributes that are not an object")
    row["attributes"] = (
        None if attributes is None else {k: _attribute(v) for k, v in attributes.items()}
    )
    return {name: row[name] for name in COLUMNS}


def read_parquet(path: Path) -> list[dict[str, Any]]:
    """Every dead letter of a Parquet export, in SCHEMA, or NotLocal (a column of another
    type, a message id missing, twice or with control characters: Spark reads those)."""
    from deadletter.pipeline.exports import NotExport, read_rows

    try:
        rows = read_rows(path)
    except NotExport as exc:
        raise NotLocal(f"a Parquet file whose {exc}") from exc
    if any(_CONTROL.search(r["message_id"] or "") for r in rows):
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


def read_dlq(options: dict[str, str], max_rows: int = LOCAL_MAX_ROWS) -> list[dict[str, Any]]:
    """Every dead letter of a DLQ (the data source's options: url, queue, project, key_id,
    secret), read as the data source reads it; NotLocal past `max_rows`."""
    from deadletter.pipeline.messages import client_of, filter_option, row_of

    rows: list[dict[str, Any]] = []
    where = filter_option(options)
    with client_of(options) as client:
        total = _total(client, options["queue"], where)
        if isinstance(total, int) and total > max_rows:
            holds = "the filter selects" if where else "the DLQ holds"
            raise NotLocal(f"{holds} {total:,} messages, more than {max_rows:,}")
        for message in client.dead_letters(options["queue"], 1000, **where):
            if len(rows) == max_rows:
                raise NotLocal(f"the DLQ holds more than {max_rows:,} dead letters")
            row = dict(zip(COLUMNS, row_of(message), strict=True))
            for name in ("dead_lettered_at", "enqueued_at"):
                if row[name] is not None:
                    # As Spark hands a timestamp back in a UTC session: naive, UTC.
                    row[name] = row[name].astimezone(UTC).replace(tzinfo=None)
            rows.append(row)
    for row in rows:
        if any(ord(c) < 0x20 for c in row["message_id"] or ""):
            raise NotLocal("a message id that holds control characters")
    return _unique(rows)


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
    """`analysis.analyze` of an export (JSON lines, or Parquet told by its first bytes), in
    this process: the same patterns.json, patterns.parquet, report.html and assignments (in
    input order)."""
    from deadletter.pipeline.exports import is_parquet

    say = progress or (lambda _stage: None)
    say("reading and masking the dead letters")
    path = Path(path)
    rows = read_parquet(path) if is_parquet(path) else read_jsonl(path)
    return analyze_rows(
        rows, out_dir, threshold=threshold, keep_assignments=keep_assignments, post=post, say=say
    )


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
