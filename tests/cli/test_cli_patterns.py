"""`deadletter dlq patterns list|show|split`: the stored patterns with how sure each is, one
pattern's variable positions and their values, and a pattern split by hand at one."""

from __future__ import annotations

import json

from deadletter.client import Client
from tests.cli.test_cli import claim_one, ok, run, url  # noqa: F401 (the live-server fixture)


def mixed_pattern(url: str) -> list[str]:  # noqa: F811
    """Three dead letters of orders-dlq whose errors name two formats, stored as one pattern
    the analysis flagged impure at its first position."""
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "5")
    errors = [
        "cannot combine TimestampType and StringType",
        "cannot combine DateType and StringType",
        "cannot combine TimestampType and LongType",
    ]
    ids = []
    for error in errors:
        ok(url, "send", "orders", "x")
        claim_id, message_id = claim_one(url, "orders")
        ok(
            url,
            "reject",
            "orders",
            message_id,
            "--claim",
            claim_id,
            "--reason",
            "bad",
            "--error",
            error,
        )
        ids.append(message_id)
    pattern = {
        "id": "p-mixed",
        "template": "cannot combine <*> and <*>",
        "count": 3,
        "message_ids": ids,
        "purity": 0.67,
        "impure": True,
        "variables": [
            {"variable": 1, "token": "<*>", "values": ["TimestampType", "DateType"],
             "counts": [2, 1], "distinct": 2, "warning": "2 values that each recur"},
            {"variable": 2, "token": "<*>", "values": ["StringType", "LongType"],
             "counts": [2, 1], "distinct": 2},
        ],
    }  # fmt: skip
    with Client(url) as client:
        client.put_patterns("orders-dlq", [pattern])
    return ids


def test_list_show_and_split_a_pattern_by_hand(url: str) -> None:  # noqa: F811
    ids = mixed_pattern(url)
    # The list says how sure each pattern is
    listed = ok(url, "dlq", "patterns", "list", "orders-dlq")
    assert "p-mixed" in listed and "0.67 impure" in listed and "cannot combine" in listed
    # One pattern's positions, with the values its members hold there
    shown = ok(url, "dlq", "patterns", "show", "orders-dlq", "p-mixed")
    assert "impure, it may mix failures" in shown
    assert "#1 <*>: TimestampType (2), DateType (1); 2 values — 2 values that each recur" in shown
    assert "#2 <*>: StringType (2), LongType (1); 2 values" in shown
    # A dry run says what a split would make, and changes nothing
    preview = ok(url, "dlq", "patterns", "split", "orders-dlq", "p-mixed", "--position", "1",
                 "--dry-run")  # fmt: skip
    assert "p-mixed would split at position 1 into 2" in preview
    assert "cannot combine DateType and <*>" in preview
    assert "p-mixed" in ok(url, "dlq", "patterns", "list", "orders-dlq")
    # Split at the first position: one pattern per format
    split = ok(url, "dlq", "patterns", "split", "orders-dlq", "p-mixed", "--position", "1")
    assert "p-mixed split at position 1 into 2" in split
    assert "cannot combine DateType and <*>" in split
    assert "cannot combine TimestampType and <*>" in split
    stored = json.loads(ok(url, "dlq", "patterns", "list", "orders-dlq", "--json"))
    assert {p["template"]: p["message_ids"] for p in stored} == {
        "cannot combine TimestampType and <*>": [ids[0], ids[2]],
        "cannot combine DateType and <*>": [ids[1]],
    }
    # A part says where it came from
    part = next(p["id"] for p in stored if p["count"] == 1)
    said = ok(url, "dlq", "patterns", "show", "orders-dlq", part)
    assert "split by hand from p-mixed at position 1 (cannot combine <*> and <*>)" in said


def test_a_split_the_server_refuses_says_why(url: str) -> None:  # noqa: F811
    mixed_pattern(url)
    result = run(url, "dlq", "patterns", "split", "orders-dlq", "p-mixed", "--position", "3")
    assert result.exit_code == 1
    assert "position must be a variable position of pattern p-mixed: 1 to 2" in result.output
    result = run(url, "dlq", "patterns", "split", "orders-dlq", "p-nope", "--position", "1")
    assert result.exit_code == 1 and "No stored pattern 'p-nope'" in result.output
    result = run(url, "dlq", "patterns", "show", "orders-dlq", "p-nope")
    assert result.exit_code == 1 and "no pattern p-nope is stored for orders-dlq" in result.output
    assert "no patterns stored for nope-dlq" not in ok(url, "queue", "create", "nope-dlq")
    assert "no patterns stored for nope-dlq" in ok(url, "dlq", "patterns", "list", "nope-dlq")
