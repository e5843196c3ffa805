"""`deadletter tag ...` and `--tag` on the consumer commands, against a live server on each
backend: the seed's scenario from the command line."""

from __future__ import annotations

import json

from tests.cli.test_cli import ok, run, url  # noqa: F401 (the live-server fixture)


def test_a_tag_has_its_own_deliveries_and_dead_letters(url: str) -> None:  # noqa: F811
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "1")
    assert "created tag billing" in ok(url, "tag", "create", "orders", "billing")
    ok(url, "tag", "create", "orders", "shipping")
    listed = json.loads(ok(url, "tag", "list", "orders", "--json"))
    assert [t["name"] for t in listed] == ["billing", "shipping"]
    (sent,) = ok(url, "send", "orders", '{"order": 1}').split()
    # billing gives it back once: at its limit, it is dead-lettered for billing only.
    claim_id, message_id = ok(url, "claim", "orders", "--tag", "billing", "--quiet").split()
    assert message_id == sent
    ok(url, "nack", "orders", message_id, "--claim", claim_id, "--tag", "billing")
    assert "nothing to claim" in ok(url, "claim", "orders", "--tag", "billing")
    dead = json.loads(ok(url, "dlq", "list", "orders-dlq", "--source-tag", "billing", "--json"))
    assert [m["provenance"]["original_message_id"] for m in dead] == [sent]
    # shipping still receives it, and acknowledges it.
    claim_id, message_id = ok(url, "claim", "orders", "--tag", "shipping", "--quiet").split()
    assert message_id == sent
    ok(url, "ack", "orders", message_id, "--claim", claim_id, "--tag", "shipping")
    shown = json.loads(ok(url, "tag", "show", "orders", "shipping", "--json"))
    assert shown["messages"]["delivered"] == 1
    assert (
        json.loads(ok(url, "tag", "show", "orders", "billing", "--json"))["messages"][
            "dead_lettered"
        ]
        == 1
    )
    # A redrive of billing's dead letters reaches billing alone.
    ok(url, "redrive", "start", "orders-dlq", "--source-tag", "billing", "--wait")
    claim_id, message_id = ok(url, "claim", "orders", "--tag", "billing", "--quiet").split()
    assert "nothing to claim" in ok(url, "claim", "orders", "--tag", "shipping")
    ok(url, "reject", "orders", message_id, "--claim", claim_id, "--tag", "billing",
       "--reason", "still bad")  # fmt: skip
    ok(url, "tag", "delete", "orders", "shipping")
    assert run(url, "claim", "orders", "--tag", "shipping").exit_code != 0


def test_reject_for_a_tag_names_the_dead_letter_and_its_dlq(url: str) -> None:  # noqa: F811
    # Given a tagged queue whose billing consumer holds a message
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "3")
    ok(url, "tag", "create", "orders", "billing")
    (sent,) = ok(url, "send", "orders", "x").split()
    claim_id, message_id = ok(url, "claim", "orders", "--tag", "billing", "--quiet").split()
    # When billing rejects it
    said = ok(url, "reject", "orders", message_id, "--claim", claim_id, "--tag", "billing",
              "--reason", "bad")  # fmt: skip
    # Then the line names the dead letter (the DLQ's copy, not the original) and where it went
    (dead,) = json.loads(ok(url, "dlq", "list", "orders-dlq", "--json"))
    assert dead["id"] != sent
    assert said.strip() == f"dead-lettered {dead['id']} to orders-dlq (from message {sent})"
