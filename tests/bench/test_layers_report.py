"""How the layers benchmark sums its runs up, the SQS face's rows beside Zaqar's."""

from __future__ import annotations

from bench.layers_bench import render


def test_each_face_has_its_rows_and_adds_only_to_its_own_layers() -> None:
    zaqar = {
        "engine": {"send": 1.0, "claim": 1.0, "delete": 1.0, "claim+ack": 1.5},
        "app": {"send": 2.0, "claim": 1.5, "delete": 1.5, "claim+ack": 2.0},
    }
    sqs = {
        "engine": {"send": 1.0, "claim": 0.5, "delete": 0.5},
        "app": {"send": 2.0, "claim": 2.0, "delete": 1.0},
    }
    rows = render({"sqlite": [{"zaqar": zaqar, "sqs": sqs}]}).splitlines()
    assert (
        "| sqlite | zaqar | app | 2.000 (2.000-2.000) | 1.500 (1.500-1.500) | 1.500 (1.500-1.500)"
        " | 2.000 (2.000-2.000) | 5.000 (5.000-5.000) | +2.000 | 1.50 | 1.00 |"
    ) in rows
    # the SQS face has no claim that acknowledges: its cell and ratio are empty
    assert (
        "| sqlite | sqs | engine | 1.000 (1.000-1.000) | 0.500 (0.500-0.500) | 0.500 (0.500-0.500)"
        " |  | 2.000 (2.000-2.000) |  | 1.00 |  |"
    ) in rows
    assert (
        "| sqlite | sqs | app | 2.000 (2.000-2.000) | 2.000 (2.000-2.000) | 1.000 (1.000-1.000)"
        " |  | 5.000 (5.000-5.000) | +3.000 | 1.50 |  |"
    ) in rows
