"""Failure groups from the command line: a saved filter names a group for every command that
selects; the group is archived (with its preview) and restored, discarded with a why kept in
the discard log, and retried by name with the task saying how many came back dead."""

from __future__ import annotations

import json

from tests.cli.test_cli import claim_one, ok, run, url  # noqa: F401 (the live-server fixture)
from tests.cli.test_cli_triage import reject


def test_a_saved_group_archived_restored_discarded_and_retried(url: str) -> None:  # noqa: F811
    # Given two timeouts and a key error dead in orders-dlq, and the timeouts saved by name
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "5")
    reject(url, "1", "TimeoutError")
    reject(url, "2", "TimeoutError")
    key = reject(url, "3", "KeyError")
    dlq = "orders-dlq"
    saved = ok(url, "dlq", "filters", "save", dlq, "timeouts", "--error-class", "TimeoutError")
    assert "saved timeouts on orders-dlq: error_class=TimeoutError" in saved
    listed = ok(url, "dlq", "filters", "list", dlq)
    assert "timeouts" in listed and " 2 " in listed
    assert ok(url, "dlq", "count", dlq, "--filter", "timeouts").strip() == "2 dead letters selected"
    # Archived: the preview changes nothing, then the group leaves the active view
    group = ["--filter", "timeouts"]
    assert "would archive 2 dead letters" in ok(url, "dlq", "archive", dlq, *group, "--dry-run")
    assert ok(url, "dlq", "count", dlq).strip() == "3 dead letters selected"
    assert "archived 2 dead letters" in ok(url, "dlq", "archive", dlq, *group, "--yes",
                                           "--retention", "3600")  # fmt: skip
    assert ok(url, "dlq", "count", dlq).strip() == "1 dead letter selected"
    kept = json.loads(ok(url, "dlq", "archived", dlq, "--json"))
    assert len(kept) == 2 and all("keep_until" in m["archived"] for m in kept)
    # A selection is required; an unknown saved filter is the server's 404
    assert run(url, "dlq", "archive", dlq, "--yes").exit_code == 2
    assert "Filter not found" in run(url, "dlq", "count", dlq, "--filter", "nope").output
    # Restored
    assert "restored 2 dead letters" in ok(url, "dlq", "restore", dlq, *group)
    assert ok(url, "dlq", "count", dlq).strip() == "3 dead letters selected"
    # Discarded, with why; the log keeps it
    keys = ["--error-class", "KeyError"]
    assert run(url, "dlq", "discard", dlq, *keys, "--yes").exit_code == 2  # --why is required
    assert "discarded 1 dead letter" in ok(url, "dlq", "discard", dlq, *keys, "--yes",
                                           "--why", "bad data")  # fmt: skip
    (record,) = json.loads(ok(url, "dlq", "discards", dlq, "--json"))
    assert (record["why"], record["count"], record["sample_ids"]) == ("bad data", 1, [key])
    assert "bad data" in ok(url, "dlq", "discards", dlq)
    # Retried by name, and followed
    task = json.loads(ok(url, "redrive", "start", dlq, *group, "--wait", "--json"))
    assert (task["status"], task["moved"]) == ("COMPLETED", 2)
    claim_id, message_id = claim_one(url, "orders")
    ok(url, "reject", "orders", message_id, "--claim", claim_id, "--reason", "again")
    status = ok(url, "redrive", "status", dlq, task["id"])
    assert "followed: 2 redriven, 1 came back dead, 1 still out" in status
    ok(url, "dlq", "filters", "delete", dlq, "timeouts")
    assert "no filters saved" in ok(url, "dlq", "filters", "list", dlq)


# Names a server refuses, each spelled so that a path built by pasting it would be another
# request: a blank (no request line at all), a query string, a fragment, a full-width letter,
# percent signs, a dot segment.
BAD_NAMES = ["bad name", "x?error_class=y", "x#y", "\uff58", "100%", "%2e%2e", "..", "tab\tname"]


def test_a_name_is_sent_as_one_path_segment(url: str) -> None:  # noqa: F811
    # Given a DLQ
    ok(url, "queue", "create", "orders-dlq")
    for name in BAD_NAMES:
        # When a filter is saved, shown or deleted under a name the server refuses
        for command in (["save", "orders-dlq", name, "--error-class", "X"],
                        ["show", "orders-dlq", name], ["delete", "orders-dlq", name]):  # fmt: skip
            answer = run(url, "dlq", "filters", *command)
            # Then the server's refusal of that very name is what the user reads
            assert answer.exit_code != 0, (name, command)
            assert "is not a filter name" in answer.output, (name, command, answer.output)
    assert "no filters saved" in ok(url, "dlq", "filters", "list", "orders-dlq")
