"""The in-process path of `deadletter analyze`: the same outputs as the Spark job, without
Spark, and Spark whenever a line might be read otherwise."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from deadletter.cli.analyze import analyze as analyze_command
from deadletter.pipeline.local import NotLocal, analyze_local, row_of_line
from tests.pipeline.conftest import PANDAS_WARNING
from tests.pipeline.error_classes import structured
from tests.pipeline.test_grouping_quality import read_log

SAME_BYTES = ["patterns.json", "patterns.parquet", "report.html"]


def _mixed_export(path: Path, corpus_path: Path) -> None:
    """The generated corpus as `deadletter dlq export` writes it (spaced, UTF-8), plus real
    log lines as descriptions, and the forms an export may hold: plain attribute values,
    nulls, times with an offset or none, non-ASCII bodies, bodies that are text or arrays."""
    rng = random.Random(3)
    records = [json.loads(line) for line in corpus_path.read_text().splitlines()]
    contents = read_log("OpenStack")[0] + read_log("Apache")[0]
    for i, content in enumerate(contents):
        records.append(
            {
                "message_id": f"log-{i:04d}",
                "source_queue": rng.choice(["ingest", "billing"]),
                "reason": "rejected",
                "description": content,
                "error": None,
                "dead_lettered_at": f"2026-11-21T{rng.randrange(24):02d}:{i % 60:02d}:07+02:00",
                "claim_count": None,
                "body": rng.choice(
                    [{"café": "é", "n": [1, {"k": None}]}, "plain text", [1, 2], None]
                ),
                "attributes": {"zone": rng.choice(["eu", "us"]), "tier": {"value": "gold"}},
                "enqueued_at": None if i % 3 else "2026-11-21 07:00:00",
            }
        )
    # and dead letters with the exception class given as a field
    records += structured(60, seed=5)
    records[5]["dead_lettered_at"] = None
    records[6]["attributes"] = None
    records[7]["attributes"] = {"empty": None}
    with path.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


@pytest.mark.spark
@pytest.mark.filterwarnings(PANDAS_WARNING)
def test_the_in_process_path_writes_what_the_spark_job_writes(
    spark: Any, corpus_path: Path, tmp_path: Path
) -> None:
    from deadletter.pipeline.analysis import analyze

    # Given an export of generated dead letters and real log lines, in every form it may take
    export = tmp_path / "export.jsonl"
    _mixed_export(export, corpus_path)
    # When both paths analyse it
    on_spark = analyze(str(export), tmp_path / "spark", spark=spark)
    here = analyze_local(export, tmp_path / "local")
    # I expect the same bytes in the summary files and the same assignment of every letter
    assert here.total == on_spark.total == len(export.read_text().splitlines())
    assert len(here.patterns) > 20
    assert {p["signature"] for p in here.patterns} >= {
        "ValueError",
        "orders.errors.PriceError",
        "java.lang.IllegalStateException",
    }
    for name in SAME_BYTES:
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "spark" / name).read_bytes()
    # and each pattern saying how sure it is, its template written as its example writes it
    assert all(0 < p["purity"] <= 1 and isinstance(p["impure"], bool) for p in here.patterns)
    assert sum(1 for p in here.patterns if p["raw_template"]) > len(here.patterns) / 2
    lines = {
        side: sorted((tmp_path / side / "assignments.jsonl").read_text().splitlines())
        for side in ("spark", "local")
    }
    assert lines["local"] == lines["spark"]
    tables = {
        side: sorted(
            spark.read.parquet(str(tmp_path / side / "assignments.parquet")).collect(),
            key=tuple,
        )
        for side in ("spark", "local")
    }
    assert tables["local"] == tables["spark"]


@pytest.mark.spark
@pytest.mark.filterwarnings(PANDAS_WARNING)
def test_a_parquet_export_gives_both_engines_what_its_json_lines_give(
    spark: Any, corpus_path: Path, tmp_path: Path
) -> None:
    from deadletter.pipeline.analysis import analyze
    from deadletter.pipeline.exports import write_parquet

    # Given the same dead letters exported as JSON lines and as Parquet (three row groups)
    export = tmp_path / "export.jsonl"
    _mixed_export(export, corpus_path)
    records = [json.loads(line) for line in export.read_text().splitlines()]
    parquet = tmp_path / "export.parquet"
    thirds = [records[i : i + 1500] for i in range(0, len(records), 1500)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("deadletter.pipeline.exports.ROW_GROUP", 1500)
        assert write_parquet(iter(thirds), parquet) == len(records)
    # When Spark reads the Parquet natively and the in-process engine reads it too
    on_spark = analyze(str(parquet), tmp_path / "spark", spark=spark, keep_assignments=True)
    here = analyze_local(parquet, tmp_path / "local", keep_assignments=True)
    from_lines = analyze_local(export, tmp_path / "lines", keep_assignments=True)
    # I expect the same bytes from both engines, and the JSON lines' own outputs
    assert here.total == on_spark.total == len(records)
    for name in SAME_BYTES:
        written = {side: (tmp_path / side / name).read_bytes() for side in ("spark", "local")}
        assert written["spark"] == written["local"] == (tmp_path / "lines" / name).read_bytes()
    assert on_spark.assignments == here.assignments == from_lines.assignments


@pytest.mark.parametrize(
    "line",
    [
        '{"message_id": "a", "body": {"price": 1.50}}',  # Spark keeps the text, 1.50
        '{"message_id": "a", "body": {"a": 1, "a": 2}}',  # Spark keeps both keys
        '{"message_id": "a", "claim_count": "7"}',  # Spark reads null
        '{"message_id": "a", "dead_lettered_at": "2026-11-20T07:32:56.1234567Z"}',
        '{"message_id": "a", "dead_lettered_at": 1700000000}',
        '{"message_id": "a", "attributes": {"n": 5}}',
        '{"message_id": "a", "attributes": {"n": {"type": "Number", "value": 5}}}',
        '{"message_id": "a", "error": {"type": "KeyError"}}',
        '{"message_id": "a", "error_class": 5}',  # Spark reads "5"
        '{"message_id": null}',
        "not json",
        "[1, 2]",
    ],
)
def test_a_line_spark_may_read_otherwise_is_left_to_spark(line: str) -> None:
    with pytest.raises(NotLocal):
        row_of_line(line)


def test_a_line_as_the_export_writes_it_is_read_as_spark_reads_it() -> None:
    line = json.dumps(
        {
            "message_id": "m-1",
            "dead_lettered_at": "2026-11-20T09:32:56.365+02:00",
            "claim_count": 5,
            "body": {"to": "ana@example.org", "vars": {"name": "Ana"}},
            "attributes": {"tenant": {"type": "String", "value": "t-1"}, "plain": "x"},
            "history": [],
        }
    )
    row = row_of_line(line)
    assert row["body"] == '{"to": "ana@example.org", "vars": {"name": "Ana"}}'
    assert row["attributes"] == {"tenant": "t-1", "plain": "x"}
    assert str(row["dead_lettered_at"]) == "2026-11-20 07:32:56.365000"
    assert row["description"] is None


def test_a_small_export_is_answered_without_starting_spark(
    corpus_path: Path, tmp_path: Path
) -> None:
    # Given a small export, when `deadletter analyze` runs on it in a fresh interpreter
    script = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from deadletter.cli.analyze import analyze\n"
        f"r = CliRunner().invoke(analyze, ['--input', {str(corpus_path)!r}, "
        f"'--out', {str(tmp_path / 'out')!r}])\n"
        "print(r.exit_code, 'pyspark' in sys.modules)\n"
        "print(r.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    status, stages = done.stdout.split("\n", 1)
    # I expect the answer, told stage by stage, with PySpark never imported
    assert status == "0 False"
    assert "analysing in this process" in stages
    assert "3,000 dead letters masked" in stages
    assert json.loads((tmp_path / "out" / "patterns.json").read_text())["total"] == 3000


def test_engine_local_refuses_a_line_it_cannot_read_exactly(tmp_path: Path) -> None:
    export = tmp_path / "export.jsonl"
    export.write_text('{"message_id": "a", "body": {"price": 1.50}}\n')
    result = CliRunner().invoke(
        analyze_command, ["--input", str(export), "--out", str(tmp_path / "r"), "--engine", "local"]
    )
    assert result.exit_code != 0
    assert "use --engine spark" in result.output


@pytest.mark.spark
@pytest.mark.filterwarnings(PANDAS_WARNING)
def test_auto_hands_an_export_it_cannot_read_exactly_to_spark(spark: Any, tmp_path: Path) -> None:
    # Given a small export whose body Spark keeps as written (1.50, not 1.5)
    export = tmp_path / "export.jsonl"
    export.write_text(
        '{"message_id": "a", "description": "timeout after 5 ms", "body": {"price": 1.50}}\n'
    )
    # When `deadletter analyze` runs on it
    result = CliRunner().invoke(analyze_command, ["--input", str(export), "--out", str(tmp_path)])
    # I expect Spark to answer it, and the body to be shown as written
    assert result.exit_code == 0, result.output
    assert "Spark reads it" in result.stderr
    assert "starting Spark" in result.stderr
    (pattern,) = json.loads((tmp_path / "patterns.json").read_text())["patterns"]
    assert pattern["example"]["body"] == '{"price": 1.50}'


@pytest.mark.spark
@pytest.mark.filterwarnings(PANDAS_WARNING)
def test_a_small_dlq_is_read_and_analysed_in_process_as_the_spark_job_does(
    spark: Any, tmp_path: Path
) -> None:
    from deadletter.pipeline.analysis import analyze
    from deadletter.pipeline.corpus import generate
    from tests.pipeline.stub import ContractStub, as_api_message
    from tests.support.servers import serving

    # Given a DLQ on a server
    records = list(generate(340, seed=11)) + structured(60, seed=11)
    server = ContractStub([as_api_message(r) for r in records])
    with serving(server.app) as url:
        # When the Spark job reads it through the data source, and the command reads it
        df = spark.read.format("deadletter").option("url", url).option("queue", "dlq").load()
        analyze(df, tmp_path / "spark")
        result = CliRunner().invoke(
            analyze_command,
            ["--url", url, "--queue", "dlq", "--out", str(tmp_path / "local")],
        )
        # I expect the command to answer without Spark, with the same outputs
        assert result.exit_code == 0, result.output
        stored = server.patterns["dlq"]
        written = json.loads((tmp_path / "local" / "patterns.json").read_text())["patterns"]
        assert [p["id"] for p in stored] == [p["id"] for p in written]
        assert all(p["message_ids"] == sorted(p["message_ids"]) for p in stored)
        assert sorted(m for p in stored for m in p["message_ids"]) == sorted(
            r["message_id"] for r in records
        )
        assert "dlq in this process" in result.stderr
        assert "starting Spark" not in result.stderr
        for name in SAME_BYTES:
            assert (tmp_path / "local" / name).read_bytes() == (
                tmp_path / "spark" / name
            ).read_bytes()
        # and a DLQ larger than the in-process limit to be left to Spark
        from deadletter.pipeline.local import export_dlq

        dlq = {"url": url, "queue": "dlq"}
        with pytest.raises(NotLocal, match="more than 399"):
            export_dlq(dlq, tmp_path / "dlq.jsonl", max_rows=399)
        assert export_dlq(dlq, tmp_path / "dlq.jsonl", max_rows=400) == 400
        assert export_dlq(dlq, tmp_path / "dlq.jsonl", max_rows=None) == 400


def test_the_help_states_the_limits_the_code_applies() -> None:
    from deadletter.pipeline.local import AUTO_LOCAL_MAX_BYTES, PARQUET_MAX_ROWS, QUEUE_MAX_ROWS

    shown = " ".join(CliRunner().invoke(analyze_command, ["--help"]).output.split())
    assert f"up to {AUTO_LOCAL_MAX_BYTES // 2**30} GB" in shown
    assert f"Parquet one of up to {PARQUET_MAX_ROWS:,} dead letters" in shown
    assert f"DLQ of up to {QUEUE_MAX_ROWS:,} dead letters" in shown


def test_a_dlq_larger_than_the_limit_is_left_to_spark_before_its_pages_are_read(
    tmp_path: Path,
) -> None:
    from deadletter.api.app import build_app
    from deadletter.clock import ManualClock
    from deadletter.engine.engine import Engine
    from deadletter.pipeline.local import export_dlq
    from deadletter.storage import open_store
    from tests.pipeline.test_datasource import _dead_letter_queue
    from tests.support.servers import serving

    # Given a real server whose DLQ holds six dead letters
    clock = ManualClock()
    engine = Engine(open_store(f"sqlite:///{tmp_path / 'dl.db'}"), clock)
    _dead_letter_queue(engine, clock)
    app = build_app(engine)
    paths: list[str] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            paths.append(scope["path"])
        await app(scope, receive, send)

    with serving(recording) as url:
        # When the in-process path may hold five, I expect it to say so from the DLQ's stats
        with pytest.raises(NotLocal, match="6 messages, more than 5"):
            export_dlq({"url": url, "queue": "dlq"}, tmp_path / "dlq.jsonl", max_rows=5)
        assert not any(p.endswith("/dead_letters") for p in paths)
        # and to read all six when it may hold six
        assert export_dlq({"url": url, "queue": "dlq"}, tmp_path / "dlq.jsonl", max_rows=6) == 6


def test_an_export_with_bytes_that_are_not_utf8_is_left_to_spark(tmp_path: Path) -> None:
    from deadletter.pipeline.local import read_jsonl

    export = tmp_path / "export.jsonl"
    export.write_bytes(b'{"message_id": "a"}\n{"message_id": "b", "error": "caf\xe9"}\n')
    with pytest.raises(NotLocal, match="not UTF-8"):
        read_jsonl(export)
