"""How the peers benchmark turns raw runs into summaries and notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench.peers.stats import render_clients_table
from bench.peers.workloads import Params
from bench.peers_bench import (
    covers_every_workload,
    notes_for,
    parse,
    summarize_system,
    update_docs,
    with_server_cpu,
)
from bench.peers_bench import runs_of as plan_of


def runs_of(**workloads: list[dict[str, Any]]) -> dict[str, Any]:
    return {"runs": workloads, "notes": []}


def test_failed_runs_do_not_count_in_the_summary_but_are_named_in_the_notes() -> None:
    data = runs_of(
        w1=[{"e2e": 100.0, "complete": True}, {"error": "boom"}, {"e2e": 300.0, "complete": True}]
    )
    summary = summarize_system(data)
    assert summary["w1"]["e2e"] == {"median": 200.0, "min": 100.0, "max": 300.0, "runs": 2}
    assert "w1 failed: boom" in notes_for("x", data)


def test_w2_notes_say_how_many_runs_verified_and_the_duplicates_of_each() -> None:
    clean = {"ok": True, "duplicates": 0, "problems": []}
    dirty = {"ok": False, "duplicates": 7, "problems": ["7 duplicate acknowledgements"]}
    data = runs_of(w2=[{"e2e": 1.0, "verify": clean}, {"e2e": 1.0, "verify": dirty}])
    notes = notes_for("x", data)
    assert "W2 verified 1/2" in notes
    assert "W2 duplicate acks per run [0, 7]" in notes


def test_a_client_side_redrive_is_said_so() -> None:
    data = runs_of(w3=[{"rate": 5.0, "mode": "client-side", "complete": True}])
    assert "W3 client-side" in notes_for("x", data)


def test_w1_runs_that_consumed_more_than_they_sent_report_duplicate_deliveries() -> None:
    data = runs_of(w1=[{"n": 10, "consumed": 10, "e2e": 1.0}, {"n": 10, "consumed": 12}])
    assert "W1 duplicate deliveries per run [0, 2]" in notes_for("x", data)


def test_the_latest_table_replaces_only_the_old_one_in_the_docs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a benchmarks page whose results table is followed by other sections
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n<!-- results -->\n\n| old | table |\n\n## Depth\n\nkept\n")
    monkeypatch.setattr("bench.peers_bench.DOCS", docs)
    # When a new table is copied in, twice
    update_docs("| new | table |\n")
    update_docs("| new | table |\n")
    # I expect the new table in place of the old one, and the sections after it kept
    assert docs.read_text() == (
        "# Benchmarks\n\n<!-- results -->\n\n| new | table |\n\n## Depth\n\nkept\n"
    )


@pytest.mark.parametrize(
    ("argv", "copied"),
    [
        ([], True),
        (["--systems", "rabbitmq", "--runs", "1"], True),
        (["--workloads", "w1"], False),
        (["--workloads", "w1,w2,w3"], False),
        (["--workloads", "w4,w3,w2,w1"], True),
        (["--clients", "4,8"], False),
        (["--workloads", "w1", "--clients", "4,8"], False),  # the acceptance runs' command
    ],
)
def test_only_a_run_of_every_workload_replaces_the_table_in_the_docs(
    argv: list[str], copied: bool
) -> None:
    assert covers_every_workload(parse(argv)) is copied


def test_clients_run_w1_once_per_count_with_as_many_producers_as_consumers() -> None:
    plan = plan_of(["w1", "w3"], [4, 16], Params(producers=2, consumers=3))
    assert [(key, workload) for key, workload, _ in plan] == [
        ("w1x4", "w1"),
        ("w1x16", "w1"),
        ("w3", "w3"),
    ]
    assert [(p.producers, p.consumers) for _, _, p in plan] == [(4, 4), (16, 16), (2, 3)]


def test_the_clients_table_gives_each_count_its_ratio_and_each_system_its_growth() -> None:
    # Given two systems run at 4 and 16 clients per side
    data = {
        "base": runs_of(w1x4=[{"e2e": 100.0}], w1x16=[{"e2e": 150.0}]),
        "peer": runs_of(w1x4=[{"e2e": 50.0}], w1x16=[{"e2e": 300.0}]),
    }
    summaries = {name: summarize_system(d) for name, d in data.items()}
    # When the table is drawn against the first
    table = render_clients_table(summaries, [4, 16], "base")
    # I expect the peer's cells divided by the base's at the same count, and each growth
    peer = next(line for line in table.splitlines() if line.startswith("| peer"))
    assert "50.0 (50.0-50.0) x0.50" in peer
    assert "300 (300-300) x2.00" in peer
    assert peer.endswith("| x6.00 |")
    base = next(line for line in table.splitlines() if line.startswith("| base"))
    assert base.endswith("| x1.50 |")
    assert "PostgreSQL's CPU" not in table  # neither ran on PostgreSQL


def test_the_clients_table_gives_postgresqls_cpu_beside_the_servers_where_there_was_one() -> None:
    # Given a system on PostgreSQL, whose runs counted PostgreSQL's CPU, beside one without
    data = {
        "sqlite": runs_of(w1x4=[{"e2e": 100.0, "server_cpu": 0.2}]),
        "postgres": runs_of(w1x4=[{"e2e": 90.0, "server_cpu": 0.25, "db_cpu": 0.18}]),
    }
    summaries = {name: summarize_system(d) for name, d in data.items()}
    # When the table is drawn
    table = render_clients_table(summaries, [4], "sqlite")
    lines = table.splitlines()
    # I expect a column of PostgreSQL's CPU after the server's, empty for the other system
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    column = header.index("PostgreSQL's CPU s per 1k, 4 per side")
    assert header[column - 1] == "server CPU s per 1k, 4 per side"
    rows = {line.split("|")[1].strip(): line.strip("|").split("|") for line in lines[2:]}
    assert rows["postgres"][column].strip().startswith("0.18")
    assert rows["sqlite"][column].strip() == "—"


def test_a_run_on_postgresql_counts_postgresqls_cpu_per_1000_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given PostgreSQL's processes at 10 CPU seconds before a run of 20,000 messages, 14 after
    monkeypatch.setattr("bench.proc.postgres_cpu_seconds", lambda: 14.0)
    result: dict[str, Any] = {"n": 20_000, "seconds": 5.0}
    # When the run's CPU is counted
    with_server_cpu(result, None, None, client_before=0.0, database_before=10.0)
    # I expect 0.2 s per 1,000 messages; and nothing for a run without the store's reading
    assert result["db_cpu"] == pytest.approx(0.2)
    without: dict[str, Any] = {"n": 20_000, "seconds": 5.0}
    with_server_cpu(without, None, None, client_before=0.0)
    assert "db_cpu" not in without
