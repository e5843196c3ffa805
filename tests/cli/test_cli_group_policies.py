"""Dead-letter policies per consumer group and per reason from the command line: a tag's own
max claims, retry backoff and DLQ (`tag create|update`), and a queue's routes by reason
(`queue create|update --dead-letter-route`), shown by `tag show` and `queue show`."""

from __future__ import annotations

import json

from tests.cli.test_cli import ok, run, url  # noqa: F401 (the live-server fixture)


def test_a_tag_with_its_own_policy(url: str) -> None:  # noqa: F811
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "billing-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "5")
    ok(url, "tag", "create", "orders", "billing", "--max-claims", "1",
       "--dead-letter-queue", "billing-dlq")  # fmt: skip
    shown = ok(url, "tag", "show", "orders", "billing")
    assert "billing-dlq (own) after 1 (own) claims" in shown
    # billing gives the message back once: at its own limit, it goes to its own DLQ.
    (sent,) = ok(url, "send", "orders", '{"order": 1}').split()
    claim_id, message_id = ok(url, "claim", "orders", "--tag", "billing", "--quiet").split()
    ok(url, "nack", "orders", message_id, "--claim", claim_id, "--tag", "billing")
    (dead,) = json.loads(ok(url, "dlq", "list", "billing-dlq", "--json"))
    assert dead["provenance"]["original_message_id"] == sent
    assert json.loads(ok(url, "dlq", "list", "orders-dlq", "--json")) == []
    # update changes one field, and --inherit gives one back to the queue.
    ok(url, "tag", "update", "orders", "billing", "--max-claims", "3",
       "--retry-min-backoff", "5", "--retry-max-backoff", "60")  # fmt: skip
    ok(url, "tag", "update", "orders", "billing", "--inherit", "dead-letter-queue")
    doc = json.loads(ok(url, "tag", "show", "orders", "billing", "--json"))
    assert (doc["max_claims"], doc["dead_letter_queue"]) == (3, None)
    assert doc["dead_letter"] == {"queue": "orders-dlq", "max_claims": 3, "active": True}
    assert doc["retry_policy"] == {"minimum_backoff": 5, "maximum_backoff": 60}
    assert "retry backoff (own): 5 s" in ok(url, "tag", "show", "orders", "billing")
    assert "orders-dlq after 3 (own) claims" in ok(url, "tag", "list", "orders")
    # A DLQ that does not exist is refused, with the server's words.
    refused = run(url, "tag", "update", "orders", "billing", "--dead-letter-queue", "nope")
    assert refused.exit_code != 0 and "does not exist" in refused.output


def test_dead_letters_routed_by_reason(url: str) -> None:  # noqa: F811
    for name in ("orders-dlq", "orders-rejects", "orders-expired"):
        ok(url, "queue", "create", name)
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "3",
       "--dead-letter-route", "rejected=orders-rejects")  # fmt: skip
    ok(url, "queue", "update", "orders", "--dead-letter-route", "expired=orders-expired")
    assert "expired -> orders-expired, rej" in ok(url, "queue", "show", "orders")
    doc = json.loads(ok(url, "queue", "show", "orders", "--json"))
    assert doc["metadata"]["_dead_letter_routes"] == {
        "expired": "orders-expired",
        "rejected": "orders-rejects",
    }
    ok(url, "send", "orders", "x")
    claim_id, message_id = ok(url, "claim", "orders", "--quiet").split()
    said = ok(url, "reject", "orders", message_id, "--claim", claim_id, "--reason", "bad")
    assert "to orders-rejects" in said
    # REASON= removes one route; the last one removed takes the key away.
    ok(url, "queue", "update", "orders", "--dead-letter-route", "rejected=")
    doc = json.loads(ok(url, "queue", "show", "orders", "--json"))
    assert doc["metadata"]["_dead_letter_routes"] == {"expired": "orders-expired"}
    ok(url, "queue", "update", "orders", "--dead-letter-route", "expired=")
    doc = json.loads(ok(url, "queue", "show", "orders", "--json"))
    assert not doc["metadata"]["_dead_letter_routes"]
    bad = run(url, "queue", "update", "orders", "--dead-letter-route", "expired")
    assert bad.exit_code != 0 and "REASON=QUEUE" in bad.output
    bad = run(url, "queue", "update", "orders", "--dead-letter-route", "bored=orders-rejects")
    assert bad.exit_code != 0 and "not a dead-letter reason" in bad.output
