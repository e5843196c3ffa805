"""`dlq list --pattern` says how sure the pattern is, as the analysis stored it."""

from __future__ import annotations

from deadletter.client import Client
from tests.cli.test_cli import ok, url  # noqa: F401 (the live-server fixture)
from tests.cli.test_cli_surfaces import given_dead_letters


def test_dead_letters_listed_by_pattern_come_with_its_purity(url: str) -> None:  # noqa: F811
    # Given two dead letters stored under an impure pattern and one under a pure one
    given_dead_letters(url, 3, source="mixed")
    with Client(url) as client:
        ids = [m["id"] for m in client.dead_letters("mixed-dlq", 10)]
        variable = {
            "variable": 1,
            "token": "<*>",
            "values": ["read", "write"],
            "counts": [2, 1],
            "distinct": 2,
            "warning": "2 values that each recur with their own structure",
        }
        client.put_patterns(
            "mixed-dlq",
            [
                {
                    "id": "p-mixed",
                    "template": "could not <*> the block",
                    "signature": "",
                    "count": 2,
                    "purity": 0.5,
                    "impure": True,
                    "variables": [variable],
                    "message_ids": ids[:2],
                },
                {
                    "id": "p-pure",
                    "template": "card <NUM> declined",
                    "signature": "PaymentDeclined",
                    "count": 1,
                    "purity": 1.0,
                    "impure": False,
                    "variables": [],
                    "message_ids": ids[2:],
                },
            ],
        )
    # When they are listed by pattern
    mixed = ok(url, "dlq", "list", "mixed-dlq", "--pattern", "p-mixed")
    pure = ok(url, "dlq", "list", "mixed-dlq", "--pattern", "p-pure")
    # I expect the pattern's purity under them, and what looks mixed
    assert (
        "pattern p-mixed: could not <*> the block (purity 0.50); impure, it may mix failures:"
        " #1 read / write"
    ) in " ".join(mixed.split())
    assert "pattern p-pure: PaymentDeclined: card <NUM> declined (purity 1.00)" in pure
    assert "impure" not in pure
    # and nothing of the kind without a pattern
    assert "purity" not in ok(url, "dlq", "list", "mixed-dlq")
