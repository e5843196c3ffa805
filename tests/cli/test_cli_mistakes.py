"""A user's mistakes on the command line are errors that say what went wrong and what to do,
with the exit codes docs/cli.md promises (1: refused or not there; 2: usage, or no server);
and what a user must copy fits an 80-column terminal whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from deadletter.cli.main import main
from tests.api.serve_process import free_port
from tests.cli.test_cli import claim_one, ok, run, url  # noqa: F401 (the live-server fixture)

TYPO = "ordrs"


def given_orders_and_its_dlq(url: str) -> str:  # noqa: F811
    """orders (its DLQ orders-dlq, one delivery) holding one message; the message's id."""
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "1")
    (sent,) = ok(url, "send", "orders", '{"order": 42}').split()
    return sent


def queue_names(url: str) -> list[str]:  # noqa: F811
    return [q["name"] for q in json.loads(ok(url, "queue", "list", "--json"))]


# Every command that names a queue, with the typo in its place.
COMMANDS_ON_A_QUEUE = [
    ("send", TYPO, "x"),
    ("peek", TYPO),
    ("claim", TYPO),
    ("ack", TYPO, "MSG", "--claim", "CLAIM"),
    ("nack", TYPO, "MSG", "--claim", "CLAIM"),
    ("reject", TYPO, "MSG", "--claim", "CLAIM", "--reason", "r"),
    ("queue", "show", TYPO),
    ("queue", "update", TYPO, "--ttl", "600"),
    ("queue", "delete", TYPO),
    ("dlq", "list", TYPO),
    ("dlq", "sources", TYPO),
    ("redrive", "status", TYPO),
    ("redrive", "start", TYPO),
    ("tag", "list", TYPO),
]


def test_every_command_on_a_mistyped_queue_names_the_nearest_and_creates_nothing(
    url: str,  # noqa: F811
) -> None:
    sent = given_orders_and_its_dlq(url)
    claim_id, _ = claim_one(url, "orders")
    for command in COMMANDS_ON_A_QUEUE:
        args = [a.replace("MSG", sent).replace("CLAIM", claim_id) for a in command]
        result = run(url, *args)
        assert result.exit_code == 1, (command, result.output)
        (line,) = result.output.splitlines()
        assert line.startswith(f"error: queue '{TYPO}' does not exist; did you mean 'orders'?")
        assert "deadletter queue list" in line
    assert sorted(queue_names(url)) == ["orders", "orders-dlq"]


def test_send_to_a_missing_queue_needs_create(url: str) -> None:  # noqa: F811
    result = run(url, "send", "nosuch", "x")
    assert result.exit_code == 1
    assert "queue 'nosuch' does not exist" in result.output
    assert "deadletter send nosuch --create" in result.output
    assert "nosuch" not in queue_names(url)
    (sent,) = ok(url, "send", "nosuch", "x", "--create").split()
    assert [m["id"] for m in json.loads(ok(url, "peek", "nosuch", "--json"))] == [sent]


def test_ack_with_a_wrong_claim_or_message_is_refused_and_deletes_nothing(
    url: str,  # noqa: F811
) -> None:
    sent = given_orders_and_its_dlq(url)
    claim_id, _ = claim_one(url, "orders")
    other = "0f4aa738-9c12-4be4-9a30-9fffd03d0889"
    for message, claim, said in [
        (sent, other, f"claim '{other}' is not a live claim on 'orders'"),
        (sent, "not-a-claim", "claim 'not-a-claim' is not a live claim on 'orders'"),
        (other, claim_id, f"message '{other}' is not held by claim '{claim_id}'"),
    ]:
        result = run(url, "ack", "orders", message, "--claim", claim)
        assert result.exit_code == 1, result.output
        assert said in result.output and not result.output.startswith("acknowledged")
    held = json.loads(ok(url, "peek", "orders", "--include-claimed", "--json"))
    assert [m["id"] for m in held] == [sent]
    assert f"acknowledged {sent}" in ok(url, "ack", "orders", sent, "--claim", claim_id)


def test_dlq_list_on_an_ordinary_queue_is_refused(url: str) -> None:  # noqa: F811
    given_orders_and_its_dlq(url)
    result = run(url, "dlq", "list", "orders")
    assert result.exit_code == 1
    assert "'orders' is not a dead-letter queue" in result.output
    assert "deadletter peek orders" in result.output
    # A DLQ with nothing in it is still one: an empty listing with its total.
    assert ok(url, "dlq", "list", "orders-dlq").splitlines() == ["no dead letters in orders-dlq"]


def test_dlq_list_ends_with_the_total_that_a_redrive_changes(url: str) -> None:  # noqa: F811
    sent = given_orders_and_its_dlq(url)
    claim_id, _ = claim_one(url, "orders")
    ok(url, "reject", "orders", sent, "--claim", claim_id, "--reason", "bad")
    assert ok(url, "dlq", "list", "orders-dlq").splitlines()[-1] == "1 dead letter in orders-dlq"
    limited = ok(url, "dlq", "list", "orders-dlq", "--reason", "max_claims")
    assert limited.splitlines()[-1] == "none matches; 1 dead letter in orders-dlq in all"
    ok(url, "redrive", "start", "orders-dlq", "--wait")
    assert ok(url, "dlq", "list", "orders-dlq").splitlines()[-1] == "no dead letters in orders-dlq"


def test_queue_create_on_an_existing_queue_with_other_settings_points_to_update(
    url: str,  # noqa: F811
) -> None:
    given_orders_and_its_dlq(url)
    result = run(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "5")
    assert result.exit_code == 1
    assert "queue 'orders' exists with other settings" in result.output
    assert "deliveries before the DLQ is 1, not 5" in result.output
    assert "deadletter queue update orders" in result.output
    meta = json.loads(ok(url, "queue", "show", "orders", "--json"))["metadata"]
    assert meta["_max_claim_count"] == 1
    # The same settings again are no error (as `aws sqs create-queue`).
    same = ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "1")
    assert "exists already" in same


def test_dlq_and_max_claims_each_name_the_other(url: str) -> None:  # noqa: F811
    result = run(url, "queue", "create", "orders", "--dlq", "orders-dlq")
    assert result.exit_code == 2
    assert "--dlq needs --max-claims" in result.output
    result = run(url, "queue", "create", "orders", "--max-claims", "3")
    assert result.exit_code == 2
    assert "--max-claims needs --dlq" in result.output


def test_queue_update_sets_and_removes_the_policy_and_settings(url: str) -> None:  # noqa: F811
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "retry-dlq")
    ok(url, "queue", "create", "orders", "--max-ttl", "7200")

    def meta() -> dict[str, object]:
        shown = json.loads(ok(url, "queue", "show", "orders", "--json"))["metadata"]
        return dict(shown)

    ok(url, "queue", "update", "orders", "--dlq", "orders-dlq", "--max-claims", "3")
    assert (meta()["_dead_letter_queue"], meta()["_max_claim_count"]) == ("orders-dlq", 3)
    # One half of the policy changes; the other is kept.
    ok(url, "queue", "update", "orders", "--max-claims", "5", "--ttl", "600")
    assert (meta()["_dead_letter_queue"], meta()["_max_claim_count"]) == ("orders-dlq", 5)
    ok(url, "queue", "update", "orders", "--dlq", "retry-dlq", "--dead-letter-on-expiry")
    assert (meta()["_dead_letter_queue"], meta()["_dead_letter_on_expiry"]) == ("retry-dlq", True)
    assert meta()["_default_message_ttl"] == 600
    ok(url, "queue", "update", "orders-dlq", "--redrive-allow", "orders,payments")
    shown = json.loads(ok(url, "queue", "show", "orders-dlq", "--json"))["metadata"]
    assert shown["_redrive_allow"] == {"permission": "byQueue", "sources": ["orders", "payments"]}
    ok(url, "queue", "update", "orders", "--no-dlq", "--reset", "max-ttl")
    after = meta()
    assert after.get("_dead_letter_queue") is None and after.get("_max_claim_count") is None
    assert after["_max_message_ttl"] != 7200
    assert "nothing to change" in ok(url, "queue", "update", "orders", "--no-dlq")
    result = run(url, "queue", "update", "orders", "--no-dlq", "--max-claims", "2")
    assert result.exit_code == 2


def test_queue_show_speaks_in_words(url: str) -> None:  # noqa: F811
    given_orders_and_its_dlq(url)
    ok(url, "queue", "update", "orders-dlq", "--redrive-allow", "orders")
    out = (
        CliRunner()
        .invoke(main, ["queue", "show", "orders-dlq"], env={"DEADLETTER_URL": url, "COLUMNS": "80"})
        .output
    )
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "_" not in out.replace("orders-dlq", "")  # no internal key
    for python in ("False", "True", "None", "{'", "'permission'"):
        assert python not in out
    assert "may be the DLQ of" in out and " orders " in out
    out = ok(url, "queue", "show", "orders")
    assert "dead-letter queue" in out and "orders-dlq" in out


def render80(url: str, *args: str) -> list[str]:  # noqa: F811
    result = CliRunner().invoke(
        main, list(args), env={"DEADLETTER_URL": url, "COLUMNS": "80"}, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80, result.output
    return lines


def test_at_80_columns_the_ids_to_copy_are_whole_on_one_line(url: str) -> None:  # noqa: F811
    sent = given_orders_and_its_dlq(url)
    ok(url, "send", "orders", "another message whose body is far too long to fit " * 3)
    lines = render80(url, "claim", "orders", "--limit", "2")
    claim_id = lines[0].split()[1]
    assert lines[0] == f"claim {claim_id}" and len(claim_id) == 36
    (row,) = [line for line in lines if sent in line]
    assert row.split()[0] == sent
    # the claim id and message id as printed are the ones ack takes
    assert f"acknowledged {sent}" in ok(url, "ack", "orders", sent, "--claim", claim_id)

    task = json.loads(ok(url, "redrive", "start", "orders-dlq", "--wait", "--json"))
    lines = render80(url, "redrive", "status", "orders-dlq")
    header = next(line for line in lines if "task" in line)
    assert header.split() == ["task", "status", "moved", "skipped", "to", "move"]
    (row,) = [line for line in lines if task["id"] in line]
    assert row.split()[:2] == [task["id"], task["status"]]
    assert "(--wide shows destination, rate, started too)" in lines
    wide = CliRunner().invoke(
        main, ["redrive", "status", "orders-dlq", "--wide"], env={"DEADLETTER_URL": url}
    )
    assert "destination" in wide.output and task["started_at"] in wide.output


def test_analyze_refuses_a_file_that_is_no_export_before_starting_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import deadletter.pipeline.schema as schema

    def no_spark(*_: object, **__: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(schema, "session", no_spark)
    cases = {
        "text.txt": ("hello world\n", "line 1 is not JSON"),
        "array.json": ('[{"message_id": "a"}]\n', "line 1 is not a JSON object"),
        "noid.jsonl": ('{"message_id": "a"}\n{"body": 1}\n', "line 2 has no message_id"),
        "fake.parquet": ("not parquet\n", "is not a Parquet file"),
    }
    for name, (text, said) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        for engine in ("auto", "spark"):
            result = CliRunner().invoke(
                main, ["analyze", "--input", str(path), "--engine", engine, "--out", "r"]
            )
            assert result.exit_code == 1, (name, result.output)
            (line,) = result.output.splitlines()
            assert line.startswith("error: ") and said in line, line
            assert "deadletter dlq export" in line


def test_analyze_on_a_missing_dlq_or_without_a_server_ends_in_one_error(
    url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    given_orders_and_its_dlq(url)
    result = run(url, "analyze", "--queue", "orders-dlx", "--out", str(tmp_path / "r"))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "error: queue 'orders-dlx' does not exist; did you mean 'orders-dlq'?"
        " (deadletter queue list)"
    ]
    dead = f"http://127.0.0.1:{free_port()}"
    result = run(dead, "analyze", "--queue", "orders-dlq", "--out", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert result.output.splitlines()[0].startswith(f"error: cannot reach the server at {dead}")
    assert "Traceback" not in result.output


def test_unreachable_and_refused_exit_codes_are_the_documented_ones(url: str) -> None:  # noqa: F811
    dead = f"http://127.0.0.1:{free_port()}"
    for args in (["claim", "orders"], ["queue", "update", "orders", "--ttl", "600"]):
        result: Result = run(dead, *args)
        assert result.exit_code == 2
        assert result.output.startswith(f"error: cannot reach the server at {dead}")
    doc = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "| 1 |" in doc and "| 2 |" in doc


def test_queue_update_takes_a_templates_settings_under_the_options_given(
    url: str,  # noqa: F811
) -> None:
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "jobs")
    ok(url, "template", "create", "strict", "--pattern", "strict-*", "--max-claims", "3",
       "--dlq", "orders-dlq", "--max-ttl", "600")  # fmt: skip
    ok(url, "queue", "update", "jobs", "--template", "strict", "--ttl", "300", "--max-claims", "2")
    meta = json.loads(ok(url, "queue", "show", "jobs", "--json"))["metadata"]
    assert (meta["_dead_letter_queue"], meta["_max_claim_count"]) == ("orders-dlq", 2)
    assert (meta["_max_message_ttl"], meta["_default_message_ttl"]) == (600, 300)
    result = run(url, "queue", "update", "jobs", "--template", "nosuch")
    assert result.exit_code == 1 and "template 'nosuch' does not exist" in result.output


# Commands whose missing queue is not the one in the request's path.
COMMANDS_ON_ANOTHER_QUEUE = [
    ("redrive", "start", "orders-dlq", "--to", TYPO),
    ("redrive", "start", "orders-dlq", "--to", TYPO, "--wait"),
]


def test_a_missing_queue_named_in_an_option_is_the_one_said_to_be_missing(
    url: str,  # noqa: F811
) -> None:
    sent = given_orders_and_its_dlq(url)
    claim_id, _ = claim_one(url, "orders")
    ok(url, "reject", "orders", sent, "--claim", claim_id, "--reason", "bad")
    for command in COMMANDS_ON_ANOTHER_QUEUE:
        result = run(url, *command)
        assert result.exit_code == 1, (command, result.output)
        assert f"queue '{TYPO}' does not exist" in result.output, result.output
        assert "'orders-dlq' does not exist" not in result.output
