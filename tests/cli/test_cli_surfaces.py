"""What a new user meets on the command line: an interrupted watch says what keeps running
and how to stop it, a file that cannot be written or read is one line, a command refuses the
wrong kind of queue, and output reads as sentences (docs/cli.md)."""

from __future__ import annotations

import json
import os
import queue as lines
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import pytest
from click.testing import CliRunner

from deadletter.cli.main import main
from deadletter.client import Client
from tests.cli.test_cli import claim_one, ok, run, url  # noqa: F401 (the live-server fixture)


def given_dead_letters(url: str, count: int, source: str = "orders") -> list[str]:  # noqa: F811
    """`source` (its DLQ `source`-dlq) whose `count` messages were rejected; their ids."""
    ok(url, "queue", "create", f"{source}-dlq")
    ok(url, "queue", "create", source, "--dlq", f"{source}-dlq", "--max-claims", "3")
    ids = ok(url, "send", source, *(json.dumps({"n": n}) for n in range(count))).split()
    for _ in ids:
        claim_id, message_id = claim_one(url, source)
        ok(url, "reject", source, message_id, "--claim", claim_id, "--reason", "bad input")
    return ids


def _lines_of(stream: IO[str]) -> tuple[lines.Queue[str], threading.Thread]:
    """The lines a pipe gives, read by a thread so the test can wait with a deadline; the
    thread ends at the pipe's end."""
    found: lines.Queue[str] = lines.Queue()

    def read() -> None:
        for line in stream:
            found.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return found, reader


def test_ctrl_c_during_a_redrive_watch_names_the_task_that_goes_on_and_how_to_stop_it(
    url: str,  # noqa: F811
) -> None:
    # Given a DLQ of three dead letters and a redrive slow enough to be watched
    given_dead_letters(url, 3)
    command = ["redrive", "start", "orders-dlq", "--wait", "--rate", "0.2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "deadletter", *command],
        env={**os.environ, "DEADLETTER_URL": url},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # SIGINT as a terminal delivers it, whatever this process ignores (a child inherits
        # an ignored SIGINT, and Python then raises no KeyboardInterrupt)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None and proc.stderr is not None
    with proc, proc.stdout, proc.stderr:
        try:
            err, reader = _lines_of(proc.stderr)
            # When the task has started, its id is said before any progress
            first = err.get(timeout=60)
            assert first.startswith("redrive "), first
            task_id = first.split()[1]
            # If the watcher is interrupted
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)
            out = proc.stdout.read()
            reader.join(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
    rest = []
    while not err.empty():
        rest.append(err.get_nowait())
    said = "".join(rest)
    # I expect the shell's code for SIGINT, the task named as still running, and the commands
    # that watch and stop it; not click's bare "Aborted!"
    assert code == 130, (code, out, said)
    assert "Aborted!" not in said + out
    assert f"redrive {task_id} keeps running" in said
    assert f"deadletter redrive status orders-dlq {task_id}" in said
    assert f"deadletter redrive cancel orders-dlq {task_id}" in said
    (task,) = json.loads(ok(url, "redrive", "status", "orders-dlq", task_id, "--json"))
    assert task["status"] in ("RUNNING", "COMPLETED")
    ok(url, "redrive", "cancel", "orders-dlq", task_id)


def test_the_task_id_is_said_when_a_watched_redrive_starts(url: str) -> None:  # noqa: F811
    given_dead_letters(url, 1)
    result = CliRunner().invoke(
        main, ["redrive", "start", "orders-dlq", "--wait"], env={"DEADLETTER_URL": url}
    )
    assert result.exit_code == 0, result.output
    started, *_, done = result.output.splitlines()
    task_id = done.split()[1].rstrip(":")
    assert started.startswith(f"redrive {task_id} started on orders-dlq: 1 to move")


def test_an_export_to_a_folder_that_does_not_exist_is_one_line(
    url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    given_dead_letters(url, 1)
    for fmt in ("jsonl", "parquet"):
        out = tmp_path / "no" / "such" / f"dead.{fmt}"
        result = run(url, "dlq", "export", "orders-dlq", "--out", str(out), "--format", fmt)
        assert result.exit_code == 1, result.output
        (line,) = result.output.splitlines()
        assert line.startswith(f"error: cannot write {out}:"), line
        assert "Traceback" not in result.output


def test_analyze_refuses_a_queue_that_is_not_a_dlq(url: str, tmp_path: Path) -> None:  # noqa: F811
    given_dead_letters(url, 2)
    ok(url, "queue", "create", "jobs")
    ok(url, "send", "jobs", '{"job": 1}')
    for queue, words in (
        ("orders", "its dead letters go to 'orders-dlq'; analyse those:"),
        ("jobs", "no queue names it as its DLQ and it holds no dead letters"),
    ):
        result = run(url, "analyze", "--queue", queue, "--out", str(tmp_path / queue))
        assert result.exit_code == 1, result.output
        (line,) = result.output.splitlines()
        assert line.startswith(f"error: {queue!r} is not a dead-letter queue: {words}"), line
        assert not (tmp_path / queue).exists()
    with Client(url) as client:
        assert client.patterns("orders") == client.patterns("jobs") == []


def test_credentials_on_a_server_with_auth_off_say_so(url: str) -> None:  # noqa: F811
    for command in (
        ("credentials", "list"),
        ("credentials", "create", "--role", "producer"),
        ("credentials", "rotate", "AKIDNOSUCH"),
        ("credentials", "revoke", "AKIDNOSUCH"),
    ):
        result = run(url, *command)
        assert result.exit_code == 1, (command, result.output)
        (line,) = result.output.splitlines()
        assert "There is no resource" not in line
        assert line.startswith("error: this server has authentication off"), line
        assert "--auth required" in line


def test_send_reads_bodies_from_standard_input_and_files(url: str, tmp_path: Path) -> None:  # noqa: F811
    ok(url, "queue", "create", "big")
    text = "x" * 140_000  # beyond what one argument of a command line may hold (128 KiB)
    document = {"items": ["y" * 100] * 400}  # both within one post of at most 256 KiB
    path = tmp_path / "order.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(
        main,
        ["send", "big", "--body-file", "-", "--body-file", str(path)],
        env={"DEADLETTER_URL": url},
        input=text,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert len(result.output.split()) == 2
    bodies = [m["body"] for m in json.loads(ok(url, "peek", "big", "--json"))]
    assert bodies == [text, document]


def test_send_without_a_body_is_a_usage_error(url: str) -> None:  # noqa: F811
    ok(url, "queue", "create", "big")
    result = run(url, "send", "big")
    assert result.exit_code == 2
    assert "--body-file" in result.output


def test_a_second_template_of_one_pattern_is_refused(url: str) -> None:  # noqa: F811
    ok(url, "template", "create", "a", "--pattern", "orders-*", "--max-claims", "3")
    ok(url, "template", "create", "b", "--pattern", "payments-*", "--max-claims", "3")
    for command in (
        ("template", "create", "c", "--pattern", "orders-*", "--max-claims", "5"),
        ("template", "update", "b", "--pattern", "orders-*"),
    ):
        result = run(url, *command)
        assert result.exit_code == 1, (command, result.output)
        (line,) = result.output.splitlines()
        assert "template 'a' already has the pattern 'orders-*'" in line
    listed = json.loads(ok(url, "template", "list", "--json"))
    assert [(t["name"], t["pattern"]) for t in listed] == [("a", "orders-*"), ("b", "payments-*")]
    # The template's own pattern, given again, is no conflict
    ok(url, "template", "update", "a", "--pattern", "orders-*", "--max-claims", "4")


def test_template_show_says_its_times_as_instants(url: str) -> None:  # noqa: F811
    ok(url, "template", "create", "a", "--pattern", "orders-*")
    doc = json.loads(ok(url, "template", "show", "a", "--json"))
    shown = ok(url, "template", "show", "a")
    for key in ("created_at", "updated_at"):
        (line,) = (line for line in shown.splitlines() if line.split()[:1] == [key])
        instant = datetime.fromtimestamp(doc[key], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert line.split()[1] == instant, line


def test_empty_results_are_sentences(url: str) -> None:  # noqa: F811
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders")
    said = {
        ("queue", "list"): "no queues yet; make one: deadletter queue create NAME",
        ("template", "list"): "no templates; make one: deadletter template create NAME",
        ("peek", "orders"): "no messages in orders to show",
        ("peek", "orders", "--include-claimed"): "no messages in orders",
        ("tag", "list", "orders"): "orders has no consumer tags",
        ("dlq", "sources", "orders-dlq"): "no queue names orders-dlq as its dead-letter queue",
        ("redrive", "status", "orders-dlq"): "no redrive tasks on orders-dlq",
    }
    empty = json.loads(ok(url, "queue", "list", "--json"))
    assert [q["name"] for q in empty] == ["orders", "orders-dlq"]
    for command, sentence in said.items():
        if command == ("queue", "list"):
            # A project of its own, with no queue at all
            output = ok(url, "queue", "list", "--project", "empty-project")
        else:
            output = ok(url, *command)
        (line,) = output.splitlines()
        assert line.startswith(sentence), (command, output)
    ok(url, "queue", "update", "orders", "--dlq", "orders-dlq", "--max-claims", "3")
    assert ok(url, "dlq", "list", "orders-dlq").splitlines() == ["no dead letters in orders-dlq"]


def test_counts_agree_with_their_nouns(url: str, tmp_path: Path) -> None:  # noqa: F811
    given_dead_letters(url, 1)
    assert ok(url, "dlq", "list", "orders-dlq").splitlines()[-1] == "1 dead letter in orders-dlq"
    out = tmp_path / "dead.jsonl"
    exported = ok(url, "dlq", "export", "orders-dlq", "--out", str(out))
    assert exported.splitlines() == [f"exported 1 dead letter to {out}"]
    corpus = tmp_path / "one.jsonl"
    assert ok(url, "analyze", "generate", "--count", "1", "--out", str(corpus)).startswith(
        "1 dead letter -> "
    )
    report = tmp_path / "report"
    found = run(url, "analyze", "--input", str(corpus), "--engine", "local", "--out", str(report))
    assert found.exit_code == 0, found.output
    assert f"1 dead letter, 1 pattern -> {report}" in found.output.splitlines()


def test_a_url_with_a_path_that_is_not_the_api_says_so(url: str) -> None:  # noqa: F811
    for path in ("/console", "/console/", "/v2"):
        result = run(url + path, "queue", "list")
        assert result.exit_code == 1, (path, result.output)
        (line,) = result.output.splitlines()
        assert "<?xml" not in line and "<html" not in line.lower()
        assert line.endswith(f"the server's base URL has no path ({path.rstrip('/')}): {url}")


HEAVY = ("httpx", "httpcore", "rich", "pyspark", "pyarrow", "uvicorn", "starlette", "psycopg")
EVERY_HELP = """
import contextlib, io, json, sys
import click
from deadletter.cli.main import main

def paths(command, path):
    yield path
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            yield from paths(command.get_command(ctx, name), [*path, name])

shown = 0
for path in paths(main, []):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        main.main([*path, "--help"], prog_name="deadletter", standalone_mode=False)
    shown += "Usage: deadletter" in out.getvalue()
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[1])))
print(json.dumps({"shown": shown, "heavy": heavy}))
"""


def test_no_help_page_imports_an_http_stack_a_table_printer_or_spark() -> None:
    # Given a fresh interpreter, when every command's --help is printed in it
    done = subprocess.run(
        [sys.executable, "-c", EVERY_HELP, json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    # Then they all were shown, and none of the heavy packages was imported for them
    assert found["shown"] >= 40
    assert found["heavy"] == []


def test_a_parquet_export_holds_the_analysis_columns_and_analyses_as_its_json_lines(
    url: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pyarrow.parquet as pq

    from deadletter.cli import dlq
    from deadletter.pipeline import exports

    # Given five dead letters, one of them with an attribute and its error as fields
    given_dead_letters(url, 4)
    with Client(url) as client:
        tenant = {"tenant": {"type": "String", "value": "acme"}}
        client.send_messages("orders", [{"body": {"n": 9}, "attributes": tenant}])
    claim_id, message_id = claim_one(url, "orders")
    ok(url, "reject", "orders", message_id, "--claim", claim_id, "--reason", "bad",
       "--error-class", "KeyError", "--error-message", "'id'")  # fmt: skip
    # When they are exported as JSON lines and as Parquet, in pages and row groups of two
    monkeypatch.setattr(exports, "ROW_GROUP", 2)
    monkeypatch.setattr(dlq, "EXPORT_PAGE", 2)
    for fmt in ("jsonl", "parquet"):
        out = tmp_path / f"dead.{fmt}"
        said = ok(url, "dlq", "export", "orders-dlq", "--out", str(out), "--format", fmt)
        assert said.strip() == f"exported 5 dead letters to {out}"
    # I expect the Parquet to hold the analysis's columns, written as the pages came
    parquet = pq.ParquetFile(tmp_path / "dead.parquet")
    assert parquet.schema_arrow == exports.ARROW_SCHEMA
    assert parquet.metadata.num_row_groups == 3
    row = pq.read_table(tmp_path / "dead.parquet").to_pylist()[-1]
    assert (row["message_id"], row["error_class"]) == (message_id, "KeyError")
    assert ("tenant", "acme") in row["attributes"]
    # and the analysis of either file to write the same report
    for fmt in ("jsonl", "parquet"):
        ok(url, "analyze", "--input", str(tmp_path / f"dead.{fmt}"), "--out", str(tmp_path / fmt))
    for name in ("patterns.json", "assignments.jsonl"):
        written = [(tmp_path / fmt / name).read_bytes() for fmt in ("jsonl", "parquet")]
        assert written[0] == written[1]
