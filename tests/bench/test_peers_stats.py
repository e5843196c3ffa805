"""The peers benchmark's pure logic: bodies, percentiles, summaries, ratios, W2 verdicts, table."""

from __future__ import annotations

import math
import os
import time

import pytest
from bench.peers.stats import (
    BODY_SIZE,
    METRICS,
    key_of,
    make_body,
    parse_body,
    percentile,
    poison_keys,
    ratio,
    render_table,
    summarize,
    verify_poison,
)


def test_a_body_names_its_key_and_kind_and_is_about_one_kib() -> None:
    body = make_body(key_of(42), poison=True)
    assert len(body) == BODY_SIZE
    assert parse_body(body) == ("00000042", True)
    assert parse_body(make_body(key_of(7), poison=False)) == ("00000007", False)


def test_two_percent_of_a_thousand_keys_are_poison_and_distinct() -> None:
    keys = poison_keys(1000, 0.02)
    assert len(keys) == 20
    assert keys <= {key_of(i) for i in range(1000)}
    assert poison_keys(10, 0.0) == set()


def test_percentiles_interpolate_between_ranks() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 50) == 50.5
    assert math.isclose(percentile(values, 99), 99.01)
    assert percentile([3.0], 99) == 3.0
    assert math.isnan(percentile([], 50))


def test_a_summary_is_the_median_min_and_max_of_the_runs_that_produced_a_value() -> None:
    s = summarize([3.0, None, 1.0, 2.0])
    assert s is not None
    assert (s.median, s.low, s.high, s.runs) == (2.0, 1.0, 3.0, 3)
    assert summarize([None]) is None


def test_a_ratio_is_missing_without_a_baseline() -> None:
    assert ratio(30.0, 10.0) == 3.0
    assert ratio(30.0, None) is None
    assert ratio(None, 10.0) is None
    assert ratio(30.0, 0.0) is None


def sent_of(healthy: int, poison: int) -> dict[str, bool]:
    sent = {key_of(i): False for i in range(healthy)}
    sent.update({key_of(healthy + i): True for i in range(poison)})
    return sent


def test_a_clean_drain_is_verified() -> None:
    # Given 8 healthy and 2 poison messages, each healthy acked once and both poison in the DLQ
    sent = sent_of(8, 2)
    verdict = verify_poison(sent, [key_of(i) for i in range(8)], [key_of(8), key_of(9)], 0)
    assert verdict.ok
    assert verdict.healthy_acked == 8
    assert verdict.poison_in_dlq == 2


def test_a_duplicate_acknowledgement_is_counted_and_fails_the_check() -> None:
    sent = sent_of(3, 1)
    acked = [key_of(0), key_of(1), key_of(1), key_of(2), key_of(1)]
    verdict = verify_poison(sent, acked, [key_of(3)], 0)
    assert verdict.duplicates == 2
    assert not verdict.ok
    assert any("duplicate" in p for p in verdict.problems)


def test_missing_healthy_lost_poison_and_a_nonempty_source_are_each_reported() -> None:
    sent = sent_of(3, 2)
    # key 2 never acked, poison key 4 acked instead of dead-lettered, healthy key 0 in the DLQ
    verdict = verify_poison(sent, [key_of(0), key_of(1), key_of(4)], [key_of(3), key_of(0)], 5)
    assert verdict.missing_healthy == 1
    assert verdict.poison_acked == 1
    assert verdict.poison_in_dlq == 1
    assert verdict.unexpected_in_dlq == 1
    assert verdict.source_left == 5
    assert len(verdict.problems) == 5


def test_the_table_shows_median_range_and_ratio_to_the_baseline() -> None:
    one = {"median": 100.0, "min": 90.0, "max": 110.0, "runs": 3}
    two = {"median": 250.0, "min": 200.0, "max": 300.0, "runs": 3}
    table = render_table(
        {"base": {"w1": {"e2e": one}}, "peer": {"w1": {"e2e": two}}},
        baseline="base",
        notes={"peer": ["W3 client-side"]},
    )
    lines = table.splitlines()
    assert lines[0].startswith("| system | W1 produce (msg/s)")
    base_row = next(line for line in lines if line.startswith("| base |"))
    peer_row = next(line for line in lines if line.startswith("| peer |"))
    assert "100 (90.0-110)" in base_row
    assert " x" not in base_row
    assert "250 (200-300) x2.50" in peer_row
    assert peer_row.rstrip().endswith("W3 client-side |")


def test_a_multiline_note_with_pipes_stays_in_its_cell() -> None:
    table = render_table(
        {"s": {}}, baseline="s", notes={"s": ["error: <html>\n<p>a | b</p>\n" + "x" * 300]}
    )
    row = table.splitlines()[2]
    assert row.count("|") == len(METRICS) + 3  # the system, each metric and the notes
    assert row.endswith("... |")


def test_server_cpu_is_counted_over_a_process_and_its_children() -> None:
    import subprocess
    import sys

    from bench.peers_bench import with_server_cpu
    from bench.proc import cpu_seconds

    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nt = time.process_time()\n"
            "while time.process_time() - t < 0.5: pass\ntime.sleep(30)",
        ]
    )
    try:
        alone = cpu_seconds(child.pid)
        while (alone or 0) < 0.5:
            alone = cpu_seconds(child.pid)
        parent = cpu_seconds(os.getpid())
        assert parent is not None and parent >= alone  # the child's time counts for us
        result: dict[str, object] = {"n": 2000, "seconds": 1.0}
        client_before = time.process_time()
        while time.process_time() - client_before < 0.2:  # the load generator's own work
            pass
        with_server_cpu(result, (0.0, 0.0), child.pid, client_before)
        assert result["server_cpu"] == pytest.approx(result["server_cpu_seconds"] / 2)  # type: ignore[operator]
        # the same time, apart by where it was spent
        assert result["server_user_seconds"] > 0  # type: ignore[operator]
        assert result["server_user_seconds"] + result["server_system_seconds"] == pytest.approx(  # type: ignore[operator]
            result["server_cpu_seconds"]
        )
        # and, apart, this process's (the load generator's) CPU
        assert result["client_cpu_seconds"] >= 0.2  # type: ignore[operator]
        assert result["client_cpu"] == pytest.approx(result["client_cpu_seconds"] / 2)  # type: ignore[operator]
    finally:
        child.kill()
        child.wait()
