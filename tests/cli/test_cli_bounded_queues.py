"""`deadletter queue create/update` bound a queue (--max-messages, --max-bytes, --overflow),
`queue show` says the bounds in words, and a send to a full queue fails with the server's
words."""

from __future__ import annotations

from tests.cli.test_cli import ok, run, url

__all__ = ["url"]


def test_a_queue_bounded_from_the_command_line(url: str) -> None:
    ok(url, "queue", "create", "jobs", "--max-messages", "2", "--overflow", "reject-publish")
    shown = ok(url, "queue", "show", "jobs")
    assert "most messages held" in shown and "2 messages" in shown
    assert "refuse the send (reject-publish)" in shown
    ok(url, "send", "jobs", "a", "b")
    result = run(url, "send", "jobs", "c")
    assert result.exit_code == 1
    assert "is full" in result.output

    ok(url, "queue", "update", "jobs", "--max-bytes", "100", "--reset", "max-messages")
    ok(url, "queue", "update", "jobs", "--overflow", "drop-head")
    shown = ok(url, "queue", "show", "jobs")
    assert "100 bytes" in shown and "2 messages" not in shown
    assert "the oldest leave (drop-head)" in shown
    ok(url, "send", "jobs", "c")


def test_out_of_range_bounds_are_refused_before_asking_the_server(url: str) -> None:
    for option in ("--max-messages", "--max-bytes"):
        result = run(url, "queue", "create", "jobs", option, "0")
        assert result.exit_code == 2
        assert "0 is not in the range 1<=x<=" in result.output
    result = run(url, "queue", "create", "jobs", "--overflow", "drop-tail")
    assert result.exit_code == 2
    assert "'drop-tail' is not one of 'drop-head', 'reject-publish'" in result.output


def test_a_full_dlq_refuses_a_reject_and_show_counts_what_it_kept(url: str) -> None:
    ok(url, "queue", "create", "jobs-dlq", "--max-messages", "1", "--overflow", "reject-publish")
    ok(url, "queue", "create", "jobs", "--dlq", "jobs-dlq", "--max-claims", "1")
    ok(url, "send", "jobs-dlq", "filler")
    ok(url, "send", "jobs", "a")
    claim_id, message_id = ok(url, "claim", "jobs", "--quiet").split()
    result = run(url, "reject", "jobs", message_id, "--claim", claim_id, "--reason", "bad")
    assert result.exit_code == 1 and "is full" in result.output
    ok(url, "nack", "jobs", message_id, "--claim", claim_id)
    assert "kept, DLQ full (max_claims)" in ok(url, "queue", "show", "jobs")
