"""`deadletter redrive status DLQ TASK_ID` says how many of a completed task's selection left
the DLQ by another road while it ran."""

from __future__ import annotations

import pytest

from deadletter.cli.redrive import _report


def test_a_completed_task_names_what_is_gone(capsys: pytest.CaptureFixture[str]) -> None:
    task = {"id": "t1", "status": "COMPLETED", "moved": 1, "to_move": 5, "skipped": 1, "gone": 3}
    _report(task, as_json=False)
    assert capsys.readouterr().out.splitlines()[0] == (
        "redrive t1: COMPLETED, moved 1 of 5, skipped 1,"
        " gone 3 (left the DLQ or were claimed meanwhile)"
    )


def test_nothing_gone_is_not_said(capsys: pytest.CaptureFixture[str]) -> None:
    task = {"id": "t1", "status": "COMPLETED", "moved": 5, "to_move": 5, "skipped": 0, "gone": 0}
    _report(task, as_json=False)
    assert "gone" not in capsys.readouterr().out
