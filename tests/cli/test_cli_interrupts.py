"""Ctrl-C on a long command says what keeps running and how to stop it, and a Spark start
that takes its time says so while it waits (docs/cli.md, *Errors and exit codes*)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from deadletter.cli import progress
from deadletter.cli.main import main
from deadletter.client import Client
from tests.cli.test_cli import ok, url  # noqa: F401 (the live-server fixture)
from tests.cli.test_cli_surfaces import given_dead_letters


def interrupted_start(monkeypatch: pytest.MonkeyPatch, *, reached: bool) -> None:
    """Ctrl-C while `start_redrive` waits for the server: after the server made the task
    (`reached`), or before the request left."""
    real = Client.start_redrive

    def start(self: Client, dlq: str, **options: Any) -> dict[str, Any]:
        if reached:
            real(self, dlq, **options)
        raise KeyboardInterrupt

    monkeypatch.setattr(Client, "start_redrive", start)


def test_ctrl_c_before_the_start_is_answered_names_the_task_the_server_made(
    url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a DLQ of three dead letters, and a redrive start whose answer never arrives
    given_dead_letters(url, 3)
    interrupted_start(monkeypatch, reached=True)
    # When it is interrupted, waiting for the task's id
    result = CliRunner().invoke(
        main,
        ["redrive", "start", "orders-dlq", "--wait", "--rate", "0.2"],
        env={"DEADLETTER_URL": url},
    )
    # Then the command looked the task up: it names it as running, with how to stop it
    monkeypatch.undo()
    (task,) = json.loads(ok(url, "redrive", "status", "orders-dlq", "--json"))
    assert result.exit_code == 130, result.output
    assert "Aborted!" not in result.output
    assert f"redrive {task['id']} was started on orders-dlq and keeps running" in result.stderr
    assert f"deadletter redrive status orders-dlq {task['id']}" in result.stderr
    assert f"deadletter redrive cancel orders-dlq {task['id']}" in result.stderr
    ok(url, "redrive", "cancel", "orders-dlq", task["id"])


def test_ctrl_c_before_the_start_left_says_no_task_runs(
    url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    given_dead_letters(url, 1)
    interrupted_start(monkeypatch, reached=False)
    result = CliRunner().invoke(
        main, ["redrive", "start", "orders-dlq", "--wait"], env={"DEADLETTER_URL": url}
    )
    assert result.exit_code == 130, result.output
    assert "Aborted!" not in result.output
    assert "no redrive task runs on orders-dlq now" in result.stderr
    assert "deadletter redrive status orders-dlq" in result.stderr


def test_a_slow_spark_start_says_it_is_still_starting_and_ctrl_c_what_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an export, and a Spark that takes its time to start and is interrupted
    export = tmp_path / "dead.jsonl"
    export.write_text(json.dumps({"message_id": "m1", "error": "boom"}) + "\n")
    monkeypatch.setattr(progress, "TICK_SECONDS", 0.1)

    def slow_session(*_: Any, **__: Any) -> Any:
        time.sleep(0.6)
        raise KeyboardInterrupt

    monkeypatch.setattr("deadletter.pipeline.schema.session", slow_session)
    # When the analysis runs on Spark
    result = CliRunner().invoke(
        main,
        ["analyze", "--input", str(export), "--engine", "spark", "--out", str(tmp_path / "r")],
    )
    # Then the wait was said, then again while it lasted, and Ctrl-C said what is left
    said = result.stderr.splitlines()
    assert result.exit_code == 130, result.output
    assert "starting Spark (its default master; a first start takes 30 to 120 s)" in said[0]
    still = [line for line in said if "... still starting Spark" in line]
    assert len(still) >= 2, said
    assert any(
        "interrupted: the analysis stopped; Spark's JVM, started by this command, ends with it:"
        " nothing keeps running" in line
        for line in said
    ), said
    assert "Aborted!" not in result.output
