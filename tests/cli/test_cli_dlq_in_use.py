"""`queue delete` of a DLQ that sources name wants --force and names them; once it is gone,
`queue list` and `queue show` flag the sources whose DLQ is missing."""

from __future__ import annotations

import json

from tests.cli.test_cli import ok, run, url  # noqa: F401 (the live-server fixture)


def test_deleting_a_dlq_in_use_wants_force_and_its_sources_are_flagged(url: str) -> None:  # noqa: F811
    # Given orders dead-lettering into orders-dlq
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "3")
    # When the DLQ is deleted without --force, it is refused, naming the source
    refused = run(url, "queue", "delete", "orders-dlq")
    assert refused.exit_code == 1, refused.output
    assert "'orders'" in refused.output and "force" in refused.output
    assert "orders-dlq" in [q["name"] for q in json.loads(ok(url, "queue", "list", "--json"))]
    assert "missing" not in ok(url, "queue", "list")
    # With --force it goes, and orders says its DLQ is missing
    assert "deleted orders-dlq" in ok(url, "queue", "delete", "orders-dlq", "--force")
    listed = ok(url, "queue", "list")
    assert "orders-dlq (missing)" in listed, listed
    shown = ok(url, "queue", "show", "orders")
    assert "orders-dlq (MISSING" in " ".join(shown.split()), shown
