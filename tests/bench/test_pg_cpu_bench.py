"""`./dev bench pg_cpu` reads the CPU of W1's cycle on PostgreSQL per 1,000 messages."""

from __future__ import annotations

import pytest
from bench.pg_cpu_bench import markdown, run_once


@pytest.mark.postgres
def test_a_run_reports_the_cpu_of_the_process_and_of_postgresql() -> None:
    result = run_once(cycles=20, body_size=1024)
    # the process and its backend spent CPU on 200 messages; all of PostgreSQL at least that
    assert result["process_ms"] > 0 and result["rate"] > 0
    assert result["postgres_ms"] >= result["backend_ms"] >= 0
    table = markdown({"this": [result, result], "base": [result]}, cycles=20, body_size=1024)
    assert "| this |" in table and "| base |" in table and "bodies of 1024 bytes" in table
    assert f"| {result['process_ms']:.0f} |" in table
