"""`deadletter analyze` and `deadletter analyze generate` from the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from deadletter.cli.analyze import analyze
from tests.pipeline.conftest import PANDAS_WARNING


def test_generate_writes_a_labelled_corpus_deterministic_by_seed(tmp_path: Path) -> None:
    runner = CliRunner()
    for name in ("a.jsonl", "b.jsonl"):
        result = runner.invoke(
            analyze, ["generate", "--out", str(tmp_path / name), "--count", "50", "--seed", "4"]
        )
        assert result.exit_code == 0, result.output
        assert "50 dead letters" in result.output
    a = (tmp_path / "a.jsonl").read_text()
    assert a == (tmp_path / "b.jsonl").read_text()
    records = [json.loads(line) for line in a.splitlines()]
    assert len(records) == 50
    assert {
        "message_id",
        "source_queue",
        "reason",
        "description",
        "error",
        "dead_lettered_at",
        "claim_count",
        "body",
        "attributes",
        "enqueued_at",
        "history",
        "label",
    } == set(records[0])
    assert len({r["label"] for r in records}) > 5


def test_analyze_needs_exactly_one_source(tmp_path: Path) -> None:
    result = CliRunner().invoke(analyze, ["--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "exactly one of --input" in result.output


@pytest.mark.spark
@pytest.mark.filterwarnings(PANDAS_WARNING)
def test_analyze_an_export_file_writes_the_report(spark: Any, tmp_path: Path) -> None:
    from deadletter.pipeline.corpus import write_jsonl

    write_jsonl(tmp_path / "dead.jsonl", 300, seed=5)
    out = tmp_path / "report"
    result = CliRunner().invoke(
        analyze, ["--input", str(tmp_path / "dead.jsonl"), "--out", str(out), "--engine", "spark"]
    )
    assert result.exit_code == 0, result.output
    assert "300 dead letters" in result.output
    assert len((out / "assignments.jsonl").read_text().splitlines()) == 300
    assert json.loads((out / "patterns.json").read_text())["total"] == 300
    assert (out / "report.html").exists()


@pytest.mark.spark
@pytest.mark.filterwarnings(PANDAS_WARNING)
def test_analyze_tells_its_stages_on_stderr_and_keeps_stdout_for_the_result(
    spark: Any, tmp_path: Path
) -> None:
    from deadletter.pipeline.corpus import write_jsonl

    write_jsonl(tmp_path / "dead.jsonl", 120, seed=6)
    result = CliRunner().invoke(
        analyze,
        [
            "--input",
            str(tmp_path / "dead.jsonl"),
            "--out",
            str(tmp_path / "r"),
            "--engine",
            "spark",
        ],
    )
    assert result.exit_code == 0, result.output
    stages = result.stderr.splitlines()
    assert re.match(r"\[\s*\d+\.\ds\] starting Spark", stages[0])
    assert any(re.search(r"\] 120 dead letters masked", line) for line in stages)
    assert re.search(r"\] done$", stages[-1])
    assert result.stdout.startswith("120 dead letters, ")
    assert "[" not in result.stdout.splitlines()[0]


@pytest.mark.spark
@pytest.mark.filterwarnings(PANDAS_WARNING)
@pytest.mark.slow
@pytest.mark.timeout(600)  # a Spark read of the DLQ and an analysis
def test_analyze_on_spark_reads_what_the_filter_options_select(spark: Any, tmp_path: Path) -> None:
    from deadletter.api.app import build_app
    from deadletter.cli.main import main
    from deadletter.engine.engine import Engine
    from deadletter.storage import open_store
    from tests.engine.helpers import P, fail, send, with_dlq
    from tests.support.servers import serving

    # Given a DLQ of three dead letters, one of them with a body that names a customer
    engine = Engine(open_store(f"sqlite:///{tmp_path / 'dl.db'}"))
    with_dlq(engine, "orders", "dlq", max_claims=1)
    send(engine, "orders", '{"customer": 1}', '{"total": 2}', '{"total": 3}')
    fail(engine, "orders", 1)
    engine.claim(P, "orders", limit=10)
    try:
        with serving(build_app(engine)) as url:
            # When Spark reads the DLQ with a filter option
            out = str(tmp_path / "r")
            args = ["analyze", "--queue", "dlq", "--engine", "spark", "--no-post",
                    "--partitions", "2", "--out", out, "--body", "!(customer)"]  # fmt: skip
            env = {"DEADLETTER_URL": url, "DEADLETTER_PROJECT": P}
            result = CliRunner().invoke(main, args, env=env)
    finally:
        engine.store.close()
    # it analysed the two it selects
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("2 dead letters, "), result.stdout
