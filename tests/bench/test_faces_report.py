"""How the faces benchmark sums its runs up."""

from __future__ import annotations

from bench.faces_bench import render, summarize


def run_of(zaqar: tuple[float, float, float], sqs: tuple[float, float, float]) -> dict:
    ops = ("send", "receive", "delete")
    return {"zaqar": dict(zip(ops, zaqar, strict=True)), "sqs": dict(zip(ops, sqs, strict=True))}


def test_each_operation_and_the_cycle_are_the_median_of_the_runs_with_their_range() -> None:
    runs = [
        run_of((1, 1, 1), (2, 1, 1)),
        run_of((3, 1, 1), (4, 1, 1)),
        run_of((2, 1, 1), (3, 2, 1)),
    ]
    summary = summarize(runs)
    assert summary["zaqar"]["send"] == {"median": 2, "min": 1, "max": 3}
    # a cycle is a run's three requests together, then the median over runs
    assert summary["sqs"]["cycle"] == {"median": 6, "min": 4, "max": 6}


def test_the_table_divides_the_sqs_face_by_the_zaqar_face() -> None:
    summary = summarize([run_of((1.0, 2.0, 0.5), (1.5, 2.0, 1.0))])
    table = render([{"code": "this", "store": "sqlite", "pause_ms": 0.0, "summary": summary}])
    rows = table.splitlines()
    assert "| this | sqlite | 0 | send | 1.000 (1.000-1.000) | 1.500 (1.500-1.500) | 1.50 |" in rows
    assert (
        "| this | sqlite | 0 | cycle | 3.500 (3.500-3.500) | 4.500 (4.500-4.500) | 1.29 |" in rows
    )
