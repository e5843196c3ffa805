"""The in-process engine's summary of a tally (tally.py): mining over the distinct masked
texts with their counts, pattern ids per masked text, samples by one sort over the message
ids, examples read back from their lines, and the outputs the Spark job writes."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deadletter.pipeline import summary
from deadletter.pipeline.analysis import Result
from deadletter.pipeline.mining import pattern_id, with_context
from deadletter.pipeline.purity import explain
from deadletter.pipeline.tally import Tally


def summarise(
    tally: Tally,
    path: Path,
    out: Path,
    *,
    threshold: float,
    keep_assignments: bool,
    post: Callable[[list[dict[str, Any]]], None] | None,
    say: Callable[[str], None],
) -> Result:
    """patterns.json, patterns.parquet, report.html and the assignments of what `tally` saw."""
    from deadletter.pipeline.lines import NotLocal
    from deadletter.pipeline.reader import paths_of

    mids, numbers, lines = tally.columns()
    # (`unique`: half the time of `count_distinct` over a million message ids)
    if len(pc.unique(mids)) != len(mids) or mids.null_count:
        raise NotLocal(f"message id {_twice(mids)!r} missing or twice")
    say(f"{len(mids):,} dead letters masked; mining templates")
    # Each (tokens, context) with its count, in the order the dead letters first show it.
    pairs: dict[tuple[str, str], int] = defaultdict(int)
    for number, (_signature, tokens, context) in enumerate(tally.masked):
        pairs[(tokens, context)] += tally.counts[number]
    found = with_context(((t, c, n) for (t, c), n in pairs.items()), threshold)
    ids: dict[tuple[str, str], str] = {}
    pid_of: list[str] = []
    template_of: list[str] = []
    for signature, tokens, context in tally.masked:
        template = found[(tokens, context)]
        pid = ids.get((template, signature))
        if pid is None:
            pid = ids[(template, signature)] = pattern_id(template, signature)
        pid_of.append(pid)
        template_of.append(template)
    say("summarising the patterns")
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for (m, queue, reason, hour, shape), (n, first, last) in tally.groups.items():
        key = (pid_of[m], template_of[m], tally.masked[m][0], queue, reason, hour, shape)
        group = groups.get(key)
        if group is None:
            groups[key] = [n, first, last]
        else:
            group[0] += n
            if first is not None:
                group[1] = first if group[1] is None else min(group[1], first)
                group[2] = last if group[2] is None else max(group[2], last)
    folded = summary.Folded((*key, *figures) for key, figures in groups.items())
    pids = pc.take(pa.array(pid_of, pa.string()), numbers) if pid_of else mids
    members = _sorted_members(mids, numbers, pid_of, lines, everyone=post is not None)
    samples = {pid: ids_of[: summary.SAMPLES] for pid, (ids_of, _line) in members.items()}
    rows = rows_at(path, {line for _ids, line in members.values()}, tally.starts)
    examples = {pid: summary.example_of(rows[line]) for pid, (_ids, line) in members.items()}
    shapes = summary.shape_findings(
        folded.shaped, folded.base, lambda s: paths_of(tally.shape_keys[s])
    )
    attrs = summary.attribute_findings(_attribute_candidates(tally, pid_of), folded.sizes())
    variables = explain(found, ((t, c, n) for (t, c), n in pairs.items()))
    patterns = summary.assemble(folded, samples, examples, shapes, attrs, variables)
    say(f"{len(patterns):,} patterns; writing the assignments")
    write_assignments(mids, pids, out)
    total = summary.write_summary(patterns, out)
    if post is not None:
        say("storing the patterns on the server")
        post([{**p, "message_ids": members[p["id"]][0]} for p in patterns])
    assigned = (
        dict(zip(mids.to_pylist(), pids.to_pylist(), strict=True)) if keep_assignments else {}
    )
    return Result(out, total, patterns, assigned)


def rows_at(
    path: Path, wanted: set[int], starts: list[tuple[int, int]]
) -> dict[int, dict[str, Any]]:
    """The whole rows (as `lines.row_of_line` reads them) on the lines `wanted`, by line
    number: only the blocks that hold them read again (`starts`: each block's first line and
    offset, in order), and only those lines decoded."""
    from bisect import bisect_right

    from deadletter.pipeline.lines import row_of_line
    from deadletter.pipeline.reader import text_lines

    by_block: dict[int, list[int]] = {}
    for n in wanted:
        by_block.setdefault(bisect_right(starts, (n, float("inf"))) - 1, []).append(n)
    found: dict[int, dict[str, Any]] = {}
    with path.open("rb") as fh:
        for block, numbers in sorted(by_block.items()):
            first, offset = starts[block]
            fh.seek(offset)
            end = starts[block + 1][1] if block + 1 < len(starts) else None
            data = fh.read(end - offset) if end is not None else fh.read()
            lines = data.split(b"\n") if b"\r" not in data else list(text_lines(data))
            for n in numbers:
                line = lines[n - first]
                text = line.decode("utf-8") if isinstance(line, bytes) else line
                found[n] = row_of_line(text.rstrip("\r\n"))
    return found


def _twice(mids: pa.Array) -> str | None:
    seen: set[str] = set()
    for mid in mids.to_pylist():
        if mid is None or mid in seen:
            return mid  # type: ignore[no-any-return]
        seen.add(mid)
    return None


def _sorted_members(
    mids: pa.Array, numbers: pa.Array, pid_of: list[str], lines: pa.Array, *, everyone: bool
) -> dict[str, tuple[list[str], int]]:
    """Each pattern's message ids in order (the first SAMPLES of them, or all), and the line
    of its first: one sort of every dead letter by (pattern, message id)."""
    if not pid_of:
        return {}
    order = {pid: i for i, pid in enumerate(dict.fromkeys(pid_of))}
    patterns = pc.take(pa.array([order[p] for p in pid_of], pa.int32()), numbers)
    table = pa.table({"p": patterns, "m": mids, "l": lines}).sort_by(
        [("p", "ascending"), ("m", "ascending")]
    )
    names = list(order)
    out: dict[str, tuple[list[str], int]] = {}
    start = 0
    for entry in pc.value_counts(table.column("p")).to_pylist():
        number, n = entry["values"], entry["counts"]
        part = table.slice(start, n if everyone else min(n, summary.SAMPLES))
        out[names[number]] = (part.column("m").to_pylist(), part.column("l")[0].as_py())
        start += n
    return out


def _attribute_candidates(tally: Tally, pid_of: list[str]) -> list[tuple[str, str, str, int, int]]:
    """(pattern, name, value, n, corpus count) where n reaches LIFT_MIN_SHARE of the pattern,
    as analysis._attribute_findings collects them: counted by Arrow, a row a distinct value."""
    size: Counter[str] = Counter()
    for number, n in tally.counts.items():
        size[pid_of[number]] += n
    counted = tally.attribute_counts()
    if not counted.num_rows:
        return []
    pids = pc.take(pa.array(pid_of, pa.string()), counted.column("m"))
    by_pattern = (
        pa.table({"p": pids, "name": counted["name"], "value": counted["value"], "n": counted["n"]})
        .group_by(["p", "name", "value"], use_threads=False)
        .aggregate([("n", "sum")])
    )
    # Only where n reaches half the pattern's size: a value seen once is one only for a
    # pattern of one or two dead letters.
    patterns = pa.array(list(size), pa.string())
    sizes = pa.array(list(size.values()), pa.float64())
    half = pc.multiply(
        pc.take(sizes, pc.index_in(by_pattern.column("p"), value_set=patterns)),
        summary.LIFT_MIN_SHARE,
    )
    kept = by_pattern.filter(pc.greater_equal(by_pattern.column("n_sum"), half))
    corpus = counted.group_by(["name", "value"], use_threads=False).aggregate([("n", "sum")])
    joined = kept.join(corpus.rename_columns(["name", "value", "corpus"]), keys=["name", "value"])
    return list(
        zip(
            *(joined.column(c).to_pylist() for c in ("p", "name", "value", "n_sum", "corpus")),
            strict=True,
        )
    )


_WRITTEN_AT_ONCE = 100_000


def write_assignments(mids: pa.Array, pids: pa.Array, out: Path) -> None:
    """assignments.jsonl as Spark's JSON writer writes it, and the Parquet folder."""
    import shutil

    import msgspec
    import pyarrow.parquet as pq

    with (out / "assignments.jsonl").open("wb") as fh:
        if len(mids) and not pc.any(pc.match_substring_regex(mids, r'["\\\x00-\x1f]')).as_py():
            # Nothing to escape: each line joined over the whole column.
            for start in range(0, len(mids), _WRITTEN_AT_ONCE):
                part = slice(start, start + _WRITTEN_AT_ONCE)
                lines = pc.binary_join_element_wise(
                    '{"message_id":"', mids[part], '","pattern_id":"', pids[part], '"}\n', ""
                )
                whole = pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines)
                fh.write(pc.binary_join(whole, "")[0].as_buffer())
        else:
            encode = msgspec.json.Encoder().encode
            fh.writelines(
                encode({"message_id": mid, "pattern_id": pid}) + b"\n"
                for mid, pid in zip(mids.to_pylist(), pids.to_pylist(), strict=True)
            )
    folder = out / "assignments.parquet"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    table = pa.table(
        {"message_id": mids, "pattern_id": pids},
        schema=pa.schema([("message_id", pa.string()), ("pattern_id", pa.string())]),
    )
    pq.write_table(table, folder / "part-00000.parquet")
    (folder / "_SUCCESS").touch()
