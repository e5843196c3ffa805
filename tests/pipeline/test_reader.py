"""The in-process engine's streaming reading (reader.py, tally.py, local_summary.py): the same
outputs as reading every dead letter first and analysing the rows, whatever the blocks, the
workers and the path each block takes; and the masking of texts by their digits' classes
(masking.Masker) giving what masking each text gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deadletter.pipeline import local, reader, tally
from deadletter.pipeline.local import NotLocal, analyze_local, analyze_rows, read_jsonl
from deadletter.pipeline.masking import Masker
from deadletter.pipeline.text import clear_caches, mining_parts, tokenize
from tests.pipeline.error_formats import generate
from tests.pipeline.test_grouping_quality import read_log
from tests.pipeline.test_local import _mixed_export

OUTPUTS = ["patterns.json", "patterns.parquet", "report.html", "assignments.jsonl"]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, corpus_path: Path) -> Path:
    """The corpus, log lines, every form an export may hold (tests/pipeline/test_local.py)."""
    path = tmp_path_factory.mktemp("mixed") / "export.jsonl"
    _mixed_export(path, corpus_path)
    return path


def _same_outputs(a: Path, b: Path) -> None:
    for name in OUTPUTS:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def _by_rows(path: Path, out: Path) -> None:
    """The analysis of the rows read one line at a time (as a DLQ's are)."""
    analyze_rows(read_jsonl(path), out)


@pytest.mark.parametrize("workers", [1, 2])
def test_blocks_and_workers_change_nothing(
    mixed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    # Given the mixed export read in blocks of 64 KB, by one process or two
    monkeypatch.setattr(reader, "BLOCK_BYTES", 64 * 1024)
    monkeypatch.setattr(local, "local_workers", lambda *_: workers)
    told: list[str] = []
    analyze_local(mixed, tmp_path / "streamed", progress=told.append)
    # I expect the outputs of analysing its rows read one by one
    _by_rows(mixed, tmp_path / "rows")
    _same_outputs(tmp_path / "streamed", tmp_path / "rows")
    # and the command to say when two processes count
    assert any("in 2 processes" in stage for stage in told) == (workers == 2)


def test_a_block_read_line_by_line_gives_what_the_fast_reading_gives(
    mixed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given blocks the fast reading takes (compact and spaced bodies, offsets, text bodies)
    data = mixed.read_bytes()
    count = tally.count_block(reader._fast(1, data))
    # When the same block is read line by line instead
    slow = tally.count_block(reader._slow(1, data))
    # I expect the same counts
    assert count.masked == slow.masked
    assert count.numbers.equals(slow.numbers)
    assert count.message_ids.equals(slow.message_ids)
    assert _by_key_paths(count) == _by_key_paths(slow)


def _by_key_paths(counted: tally.Counted) -> dict[tuple[object, ...], list[object]]:
    """The block's groups with each body key read as its key paths."""
    out: dict[tuple[object, ...], list[object]] = {}
    g = counted.groups.to_pylist()
    for row in g:
        paths = tuple(reader.paths_of(counted.shape_keys[row["s"]]))
        key = (row["m"], row["q"], row["r"], row["hour"], paths)
        n, first, last = out.get(key, [0, row["t_min"], row["t_max"]])
        pick = [t for t in (first, row["t_min"]) if t is not None]
        last_pick = [t for t in (last, row["t_max"]) if t is not None]
        out[key] = [
            n + row["m_count"],
            min(pick) if pick else None,
            max(last_pick) if last_pick else None,
        ]
    return out


@pytest.mark.parametrize(
    "odd",
    [
        lambda line: line.replace('"body": ', '"body" : ', 1),  # a blank before the colon
        lambda line: line + "\r",  # a carriage return
        lambda line: "  " + line,  # a line that starts with blanks
        lambda line: line + "\n",  # a blank line after it
        lambda line: line.replace('"body": {', '"body":  {', 1),  # two blanks
    ],
)
def test_a_block_the_fast_reading_is_unsure_of_is_read_line_by_line(
    mixed: Path, tmp_path: Path, odd: object
) -> None:
    # Given the export with one line written oddly
    lines = mixed.read_text(encoding="utf-8").splitlines()
    nested = next(i for i, line in enumerate(lines) if '"body": {' in line)
    lines[nested] = odd(lines[nested])  # type: ignore[operator]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(reader.Slow):
        reader._fast(1, path.read_bytes())
    # I expect what reading each line gives, as ever: the same outputs, or the same refusal
    try:
        _by_rows(path, tmp_path / "rows")
    except NotLocal as exc:
        with pytest.raises(NotLocal) as streamed:
            analyze_local(path, tmp_path / "streamed")
        assert str(streamed.value) == str(exc)
        return
    analyze_local(path, tmp_path / "streamed")
    _same_outputs(tmp_path / "streamed", tmp_path / "rows")


def test_a_line_that_only_spark_reads_exactly_is_named_by_its_number(
    mixed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader, "BLOCK_BYTES", 64 * 1024)
    lines = mixed.read_text(encoding="utf-8").splitlines()
    lines[2500] = json.dumps({"message_id": "x", "body": {"price": 1.50}}).replace("1.5", "1.50")
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(NotLocal, match="line 2501 holds") as streamed:
        analyze_local(path, tmp_path / "out")
    with pytest.raises(NotLocal) as by_rows:
        read_jsonl(path)
    assert str(streamed.value) == str(by_rows.value)


def _texts() -> list[tuple[str | None, str | None, str | None]]:
    """Error texts no one here wrote: real log lines and fourteen packages' error formats."""
    keys: list[tuple[str | None, str | None, str | None]] = []
    for name in ("OpenStack", "Apache", "HDFS", "Spark", "Mac"):
        keys += [(line, None, None) for line in read_log(name)[0]]
    for messages, _labels in generate("tuning").values():
        keys += [(None, m, None) for m in messages]
    keys += [("_LEGACY_ERROR_TEMP_2033: x 12", None, None), (None, "d", "Err42")]
    return keys


def test_texts_masked_by_their_digits_classes_mask_as_each_text_does() -> None:
    keys = _texts()
    masker = Masker()
    by_class = [masker.mask(k) for k in keys]
    clear_caches()
    for key, found in zip(keys, by_class, strict=True):
        signature, headline, context = mining_parts(*key)
        expected = (
            signature,
            " ".join(tokenize(headline)),
            " ".join(tokenize(context)) if context else "",
        )
        assert found == expected, key
    # and fewer texts were masked than were given
    assert len(masker._by_class) < len(set(keys))


def test_a_tag_that_keeps_its_digits_is_not_taken_for_another() -> None:
    # Given a tag seen with digits that another tag's digits, as classes, spell
    clear_caches()
    assert tokenize("failed _LEGACY_ERROR_TEMP_1011 now")[1] == "_LEGACY_ERROR_TEMP_1011"
    # I expect the other tag to keep its own digits
    assert tokenize("failed _LEGACY_ERROR_TEMP_2033 now")[1] == "_LEGACY_ERROR_TEMP_2033"


def test_two_processes_count_only_when_a_core_is_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local.os, "cpu_count", lambda: 2)
    # Where the machine's idle time is measured: half a core idle since `since`, or less
    since = (1000, 4000)
    monkeypatch.setattr(local, "cpu_times", lambda: (1000 + 50, 4000 + 200))
    assert local.local_workers(since) == 2
    monkeypatch.setattr(local, "cpu_times", lambda: (1000 + 40, 4000 + 200))
    assert local.local_workers(since) == 1
    # Where it cannot be (no /proc/stat, or too short a while): by the load average
    monkeypatch.setattr(local, "cpu_times", lambda: None)
    monkeypatch.setattr(local.os, "getloadavg", lambda: (0.4, 0.0, 0.0))
    assert local.local_workers(since) == 2
    monkeypatch.setattr(local.os, "getloadavg", lambda: (1.5, 0.0, 0.0))
    assert local.local_workers(since) == 1
    monkeypatch.setattr(local, "cpu_times", lambda: (1000, 4001))
    assert local.local_workers(since) == 1


def test_a_second_analysis_with_every_cache_full_writes_the_same(
    mixed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the mixed export analysed once in blocks of 64 KB, its caches kept (texts masked,
    # bodies' classes and their blanked texts)
    monkeypatch.setattr(reader, "BLOCK_BYTES", 64 * 1024)
    monkeypatch.setattr(local, "local_workers", lambda *_: 1)
    analyze_local(mixed, tmp_path / "first")
    # When it is analysed again, by two processes whose caches start full
    monkeypatch.setattr(local, "local_workers", lambda *_: 2)
    analyze_local(mixed, tmp_path / "second")
    # I expect the same outputs
    _same_outputs(tmp_path / "first", tmp_path / "second")


def test_bodies_alike_but_for_their_digits_keep_their_own_key_paths(tmp_path: Path) -> None:
    # Given compact bodies whose keys, or whose long numbers, differ only in their digits
    bodies = [
        {"a2": 1, "total": 12.5},
        {"a3": 2, "total": 31.25},
        {"a2": 7, "total": 10.5},
        {"x": 0.30000000000000004},
        {"x": 0.10000000000000002},
        {"y": [12345678.5, {"z9": None}]},
        {"y": [22345678.5, {"z8": None}]},
    ]
    path = tmp_path / "digits.jsonl"
    with path.open("w") as fh:
        for i, body in enumerate(bodies * 20):
            record = {"message_id": f"m-{i:03d}", "error": "boom", "body": body}
            fh.write(json.dumps(record, separators=(",", ":")) + "\n")
    # read by the fast reading
    block = reader._fast(1, path.read_bytes())
    paths = sorted({tuple(reader.paths_of(k)) for k in block.shape_keys})
    # I expect each body's own key paths, and the outputs of reading each line
    assert ("a2:number", "total:number") in paths and ("a3:number", "total:number") in paths
    assert ("y:array", "y[].z8:null") in paths and ("y:array", "y[].z9:null") in paths
    analyze_local(path, tmp_path / "streamed")
    _by_rows(path, tmp_path / "rows")
    _same_outputs(tmp_path / "streamed", tmp_path / "rows")
