"""The command line against a live server on each backend, through click's runner."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from deadletter.api.app import AppOptions, build_app
from deadletter.cli.main import main
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage.base import Store
from tests.api.serve_process import free_port
from tests.support.servers import serving


@pytest.fixture
def url(store: Store) -> Iterator[str]:
    engine = Engine(store)
    app = build_app(engine, AppOptions(), background=[Worker(engine, sweep_interval=0.2)])
    with serving(app) as base:
        yield base


def run(url: str, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"DEADLETTER_URL": url}, catch_exceptions=False)


def ok(url: str, *args: str) -> str:
    result = run(url, *args)
    assert result.exit_code == 0, result.output
    return result.output


def claim_one(url: str, queue: str) -> tuple[str, str]:
    claim_id, message_id = ok(url, "claim", queue, "--quiet").split()
    return claim_id, message_id


def test_dead_letter_lifecycle(url: str, tmp_path: Path) -> None:
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "2")
    (sent,) = ok(url, "send", "orders", '{"order": 42}').split()
    for _ in range(2):
        claim_id, message_id = claim_one(url, "orders")
        assert message_id == sent
        ok(url, "nack", "orders", message_id, "--claim", claim_id)
    assert "nothing to claim" in ok(url, "claim", "orders")

    listed = json.loads(ok(url, "dlq", "list", "orders-dlq", "--json"))
    assert [m["id"] for m in listed] == [sent]
    assert listed[0]["provenance"]["reason"] == "max_claims"
    assert listed[0]["provenance"]["source_queue"] == "orders"

    ok(url, "send", "orders", "plain text")
    claim_id, message_id = claim_one(url, "orders")
    ok(url, "reject", "orders", message_id, "--claim", claim_id, "--reason", "bad", "--error", "E1")
    rejected = json.loads(ok(url, "dlq", "list", "orders-dlq", "--reason", "rejected", "--json"))
    assert [(m["id"], m["provenance"]["description"]) for m in rejected] == [(message_id, "bad")]

    shown = json.loads(ok(url, "queue", "show", "orders", "--json"))
    assert shown["stats"]["dead_letter"]["dead_lettered"] == {"max_claims": 1, "rejected": 1}
    sources = json.loads(ok(url, "dlq", "sources", "orders-dlq", "--json"))
    assert [s["name"] for s in sources] == ["orders"]

    out = tmp_path / "dead.jsonl"
    ok(url, "dlq", "export", "orders-dlq", "--out", str(out))
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["message_id"] for r in records} == {sent, message_id}
    assert {r["reason"] for r in records} == {"max_claims", "rejected"}
    assert all(r["source_queue"] == "orders" and r["dead_lettered_at"] for r in records)

    task = json.loads(ok(url, "redrive", "start", "orders-dlq", "--wait", "--json"))
    assert (task["status"], task["moved"], task["to_move"]) == ("COMPLETED", 2, 2)
    assert json.loads(ok(url, "dlq", "list", "orders-dlq", "--json")) == []
    bodies = [m["body"] for m in json.loads(ok(url, "peek", "orders", "--json"))]
    assert bodies == [{"order": 42}, "plain text"]
    status = json.loads(ok(url, "redrive", "status", "orders-dlq", "--json"))
    assert [t["id"] for t in status] == [task["id"]]


def test_ack_removes_the_message(url: str) -> None:
    ok(url, "queue", "create", "jobs")
    ok(url, "send", "jobs", "1")
    claim_id, message_id = claim_one(url, "jobs")
    ok(url, "ack", "jobs", message_id, "--claim", claim_id)
    assert json.loads(ok(url, "peek", "jobs", "--include-claimed", "--json")) == []


def test_server_errors_exit_non_zero_with_the_servers_words(url: str) -> None:
    result = run(url, "queue", "show", "missing")
    assert result.exit_code == 1
    assert "does not exist" in result.output
    result = run(url, "queue", "create", "orders", "--dlq", "nowhere", "--max-claims", "3")
    assert result.exit_code == 1
    assert "nowhere" in result.output


def test_an_unreachable_server_is_named() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    result = run(dead, "queue", "list")
    assert result.exit_code == 2
    assert dead in result.output


def test_dlq_and_max_claims_go_together(url: str) -> None:
    result = run(url, "queue", "create", "orders", "--dlq", "orders-dlq")
    assert result.exit_code == 2
    assert "--max-claims" in result.output


def test_the_package_runs_as_a_module_and_as_a_driver_script() -> None:
    """`python -m deadletter` and spark-submit's `.../deadletter/__main__.py` reach the CLI."""
    import subprocess
    import sys

    import deadletter

    script = Path(deadletter.__file__).with_name("__main__.py")
    for argv in ([sys.executable, "-m", "deadletter"], [sys.executable, str(script)]):
        done = subprocess.run([*argv, "analyze", "--help"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "--out" in done.stdout


def test_the_config_file_points_the_cli_at_the_server(url: str, no_configuration: Path) -> None:
    path = no_configuration / "deadletter" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(f'url = "{url}"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["queue", "create", "from-file"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "from-file" in ok(url, "queue", "list")


def test_tables_fit_80_columns_with_short_ids_and_whole_ones_when_wide(url: str) -> None:
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "1")
    (sent,) = ok(url, "send", "orders", '{"order": 42}').split()
    claim_id, _ = claim_one(url, "orders")
    reason = "customer.id is missing from every order of the new checkout release " * 2
    ok(url, "reject", "orders", sent, "--claim", claim_id, "--reason", reason, "--error", "E")
    (dead,) = json.loads(ok(url, "dlq", "list", "orders-dlq", "--json"))
    stamp = dead["provenance"]["dead_lettered_at"]  # e.g. 2026-11-23T15:13:19.859Z

    def render(*args: str) -> list[str]:
        result = CliRunner().invoke(
            main, list(args), env={"DEADLETTER_URL": url, "COLUMNS": "80"}, catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        return result.output.splitlines()

    lines = render("dlq", "list", "orders-dlq")
    assert max(len(line) for line in lines) <= 80
    (row,) = [line for line in lines if sent[-8:] in line]
    assert sent not in row  # the last 8 characters only
    assert f"{stamp[5:10]} {stamp[11:19]}" in row  # MM-DD HH:MM:SS, whole
    assert "max_claims" not in row and "rejected" in row and "customer.id is" in row
    assert row.rstrip().endswith("…")

    wide = render("dlq", "list", "orders-dlq", "--wide")
    (row,) = [line for line in wide if sent in line]
    assert stamp in row and reason.strip() in row

    (waiting,) = ok(url, "send", "orders", '{"order": 43}').split()
    lines = render("peek", "orders")
    assert max(len(line) for line in lines) <= 80
    (row,) = [line for line in lines if waiting[-8:] in line]
    assert waiting not in row


def test_analyze_with_url_and_an_export_needs_the_dlq_to_store_patterns_on(tmp_path: Path) -> None:
    export = tmp_path / "dead.jsonl"
    export.write_text("", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["analyze", "--input", str(export), "--url", "http://127.0.0.1:1"]
    )
    assert result.exit_code == 2
    assert "needs --queue" in result.output


def test_templates_from_the_command_line(url: str) -> None:
    # Given a template for orders-* (its DLQ created first),
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "template", "create", "orders", "--pattern", "orders-*", "--max-claims", "3",
       "--dlq", "orders-dlq", "--max-ttl", "600")  # fmt: skip
    listed = json.loads(ok(url, "template", "list", "--json"))
    assert [(t["name"], t["max_claims"], t["dlq"]) for t in listed] == [("orders", 3, "orders-dlq")]
    ok(url, "template", "update", "orders", "--max-claims", "2")
    assert json.loads(ok(url, "template", "show", "orders", "--json"))["max_ttl"] == 600
    # a queue created without settings takes them.
    ok(url, "queue", "create", "orders-eu")
    meta = json.loads(ok(url, "queue", "show", "orders-eu", "--json"))["metadata"]
    assert (meta["_max_claim_count"], meta["_dead_letter_queue"]) == (2, "orders-dlq")
    ok(url, "template", "delete", "orders")
    assert json.loads(ok(url, "template", "list", "--json")) == []


def test_queue_create_with_the_default_dlq_and_the_ttl_model(url: str) -> None:
    assert run(url, "queue", "create", "jobs", "--max-claims", "2").exit_code == 2
    ok(url, "queue", "create", "jobs", "--max-claims", "2", "--default-dlq",
       "--min-ttl", "1", "--max-ttl", "5", "--respect-ttl")  # fmt: skip
    meta = json.loads(ok(url, "queue", "show", "jobs", "--json"))["metadata"]
    assert meta["_dead_letter_queue"] == "_dead_msg_queue"
    assert (meta["_min_message_ttl"], meta["_max_message_ttl"], meta["_respect_ttl"]) == (
        1,
        5,
        True,
    )


def test_serve_takes_only_a_region_name_as_its_home_region() -> None:
    result = CliRunner().invoke(main, ["serve", "--region", "moon-base"])
    assert result.exit_code == 2
    assert "is not an AWS region's name" in result.output


def test_reject_with_the_error_as_fields_shows_them(url: str, tmp_path: Path) -> None:
    # Given a consumer that rejects with the exception's class, message and stack,
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "5")
    ok(url, "send", "orders", "m")
    claim_id, message_id = claim_one(url, "orders")
    stack = 'Traceback (most recent call last):\n  File "app.py", line 3'
    ok(url, "reject", "orders", message_id, "--claim", claim_id, "--reason", "bad",
       "--error-class", "KeyError", "--error-message", "'id'", "--error-stack", stack)  # fmt: skip
    # the dead letter keeps each field, the table names the class, the export carries it.
    (dead,) = json.loads(ok(url, "dlq", "list", "orders-dlq", "--json"))
    prov = dead["provenance"]
    assert (prov["error_class"], prov["error"], prov["error_stack"]) == ("KeyError", "'id'", stack)
    assert "KeyError: 'id'" in ok(url, "dlq", "list", "orders-dlq", "--wide")
    out = tmp_path / "dead.jsonl"
    ok(url, "dlq", "export", "orders-dlq", "--out", str(out))
    assert json.loads(out.read_text())["error_class"] == "KeyError"


@pytest.mark.parametrize("dlq", [True, False])
def test_nack_no_requeue_dead_letters_or_drops(url: str, dlq: bool) -> None:
    ok(url, "queue", "create", "orders-dlq")
    options = ["--dlq", "orders-dlq", "--max-claims", "5"] if dlq else []
    ok(url, "queue", "create", "orders", *options)
    ok(url, "send", "orders", "m")
    claim_id, message_id = claim_one(url, "orders")
    assert run(url, "nack", "orders", message_id, "--claim", claim_id, "--no-requeue",
               "--delay", "3").exit_code != 0  # fmt: skip
    ok(url, "nack", "orders", message_id, "--claim", claim_id, "--no-requeue")
    stats = json.loads(ok(url, "queue", "show", "orders", "--json"))["stats"]
    assert stats["messages"]["total"] == 0
    if dlq:
        rejected = json.loads(ok(url, "dlq", "list", "orders-dlq", "--json"))
        assert [m["provenance"]["reason"] for m in rejected] == ["rejected"]
    else:
        assert json.loads(ok(url, "peek", "orders-dlq", "--json")) == []
        assert stats["dead_letter"]["dropped"] == {"rejected": 1}


def test_queue_retry_policy_and_max_redelivery(url: str) -> None:
    # Given a queue created with a retry policy and Solace's redelivery count
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-redelivery", "4",
       "--retry-min-backoff", "10", "--retry-max-backoff", "600")  # fmt: skip

    def meta() -> dict[str, object]:
        shown = json.loads(ok(url, "queue", "show", "orders", "--json"))
        return dict(shown["metadata"])

    got = meta()
    assert (got["_max_redelivery"], got["_max_claim_count"]) == (4, 5)
    assert got["_retry_policy"] == {"minimum_backoff": 10, "maximum_backoff": 600}
    assert "10 s, doubling up to 600 s" in ok(url, "queue", "show", "orders")
    # When one backoff is changed, the other is kept; the redelivery count changes alone
    ok(url, "queue", "update", "orders", "--retry-max-backoff", "60", "--max-redelivery", "0")
    got = meta()
    assert got["_retry_policy"] == {"minimum_backoff": 10, "maximum_backoff": 60}
    assert (got["_max_redelivery"], got["_max_claim_count"]) == (0, 1)
    # A minimum above the maximum, or half a policy, is refused before any request
    assert run(url, "queue", "update", "orders", "--retry-min-backoff", "61").exit_code == 2
    assert run(url, "queue", "create", "jobs", "--retry-min-backoff", "1").exit_code == 2
    assert run(url, "queue", "create", "jobs", "--retry-max-backoff", "601").exit_code == 2
    conflicting = ("--max-claims", "3", "--max-redelivery", "3")
    assert run(url, "queue", "update", "orders", *conflicting).exit_code == 2
    # And --no-retry-policy removes it
    ok(url, "queue", "update", "orders", "--no-retry-policy")
    assert meta().get("_retry_policy") is None
    assert run(url, "queue", "create", "jobs", "--retry-max-backoff", "5").exit_code == 2


def test_a_templates_retry_policy_from_the_command_line(url: str) -> None:
    ok(url, "template", "create", "jobs", "--pattern", "jobs-*",
       "--retry-min-backoff", "5", "--retry-max-backoff", "50")  # fmt: skip
    ok(url, "template", "update", "jobs", "--retry-max-backoff", "80")
    (listed,) = json.loads(ok(url, "template", "list", "--json"))
    assert listed["retry_policy"] == {"minimum_backoff": 5, "maximum_backoff": 80}
    ok(url, "queue", "create", "jobs-1")
    meta = json.loads(ok(url, "queue", "show", "jobs-1", "--json"))["metadata"]
    assert meta["_retry_policy"] == {"minimum_backoff": 5, "maximum_backoff": 80}


def test_the_ttl_model_and_eligibility_switches_on_queues_and_templates(url: str) -> None:
    # Given a queue and a template that turn both switches off
    ok(url, "queue", "create", "audit", "--no-respect-ttl", "--not-eligible")
    ok(url, "template", "create", "logs", "--pattern", "logs-*", "--no-respect-ttl",
       "--not-eligible")  # fmt: skip
    meta = json.loads(ok(url, "queue", "show", "audit", "--json"))["metadata"]
    assert (meta["_respect_ttl"], meta["_dead_letter_eligible"]) == (False, False)
    made = json.loads(ok(url, "template", "show", "logs", "--json"))
    assert (made["respect_ttl"], made["dead_letter_eligible"]) == (False, False)
    # When both are turned back on, I expect them on
    ok(url, "queue", "update", "audit", "--respect-ttl", "--eligible")
    ok(url, "template", "update", "logs", "--respect-ttl", "--eligible")
    meta = json.loads(ok(url, "queue", "show", "audit", "--json"))["metadata"]
    assert (meta["_respect_ttl"], meta["_dead_letter_eligible"]) == (True, True)
    made = json.loads(ok(url, "template", "show", "logs", "--json"))
    assert (made["respect_ttl"], made["dead_letter_eligible"]) == (True, True)
