"""Triage from the command line: the filter options select the same dead letters on `dlq
list`, `count`, `export`, `purge` and `redrive start` (each with its preview), and `dlq edit`
fixes a dead letter and sends it back."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.cli.test_cli import claim_one, ok, run, url  # noqa: F401 (the live-server fixture)


def reject(url: str, body: str, error_class: str) -> str:  # noqa: F811
    """Send `body` to orders, claim it, reject it with `error_class`."""
    ok(url, "send", "orders", body)
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
        "--error-class",
        error_class,
    )
    return message_id


def test_one_set_of_filters_for_list_count_export_purge_and_redrive(
    url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    # Given three dead letters: two KeyErrors (one of tenant acme, without an id), a ValueError
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "5")
    acme = reject(url, '{"customer": {"tenant": "acme"}}', "KeyError")
    other = reject(url, '{"customer": {"id": 1}}', "KeyError")
    reject(url, '{"customer": {"id": 2}}', "ValueError")
    keys = ["--error-class", "KeyError"]
    # list, count and export select the same two
    listed = json.loads(ok(url, "dlq", "list", "orders-dlq", *keys, "--json"))
    assert {m["id"] for m in listed} == {acme, other}
    assert ok(url, "dlq", "count", "orders-dlq", *keys).strip() == "2 dead letters selected"
    out = tmp_path / "keys.jsonl"
    ok(url, "dlq", "export", "orders-dlq", "--out", str(out), *keys, "--body", "customer.id")
    assert [json.loads(line)["message_id"] for line in out.read_text().splitlines()] == [other]
    # a purge's and a redrive's previews count and change nothing
    both = [*keys, "--body", "customer.tenant == 'acme'", "--max-deaths", "1"]
    assert "would delete 1 dead letter" in ok(url, "dlq", "purge", "orders-dlq", *both,
                                               "--dry-run")  # fmt: skip
    assert "would move 2 dead letters" in ok(url, "redrive", "start", "orders-dlq", *keys,
                                              "--dry-run")  # fmt: skip
    assert ok(url, "dlq", "count", "orders-dlq").strip() == "3 dead letters selected"
    # the purge deletes what it selects, and takes a filter
    assert "deleted 1 dead letter" in ok(url, "dlq", "purge", "orders-dlq", *both, "--yes")
    refused = run(url, "dlq", "purge", "orders-dlq", "--yes")
    assert refused.exit_code == 2 and "at least one filter" in refused.output
    # the redrive moves the rest of the KeyErrors back
    done = json.loads(ok(url, "redrive", "start", "orders-dlq", *keys, "--wait", "--json"))
    assert (done["status"], done["moved"]) == ("COMPLETED", 1)
    assert ok(url, "dlq", "count", "orders-dlq", *keys).strip() == "no dead letters selected"


def test_a_bad_filter_option_is_the_servers_refusal_naming_it(url: str) -> None:  # noqa: F811
    ok(url, "queue", "create", "orders-dlq")
    result = run(url, "dlq", "count", "orders-dlq", "--older-than", "soon")
    assert result.exit_code == 1
    assert "Invalid filter" in result.output and "older_than" in result.output


def test_dlq_edit_fixes_a_dead_letter_and_redrives_it(url: str) -> None:  # noqa: F811
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "5")
    mid = reject(url, '{"total": 3}', "KeyError")
    out = ok(url, "dlq", "edit", "orders-dlq", mid, "--merge",
             '{"body": {"customer": {"id": "c-0"}}}', "--redrive")  # fmt: skip
    assert f"edited {mid}" in out and "redrive " in out
    ok(url, "redrive", "status", "orders-dlq")
    # the edited order is back in its queue (the worker moves it), with its history
    for _ in range(100):
        peeked = json.loads(ok(url, "peek", "orders", "--json"))
        if peeked:
            break
        time.sleep(0.05)
    (back,) = peeked
    assert back["body"] == {"total": 3, "customer": {"id": "c-0"}}
    assert [e["event"] for e in back["history"]] == ["dead_lettered", "edited", "redriven"]
    bad = run(url, "dlq", "edit", "orders-dlq", mid, "--merge", "{}", "--patch", "[]")
    assert bad.exit_code == 2 and "one of them" in bad.output


def test_analyze_reads_what_the_filter_options_select(url: str, tmp_path: Path) -> None:  # noqa: F811
    # Given three dead letters, two KeyErrors (one of them of tenant acme) and a ValueError
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "5")
    acme = reject(url, '{"customer": {"tenant": "acme"}}', "KeyError")
    other = reject(url, '{"customer": {"id": 1}}', "KeyError")
    reject(url, '{"customer": {"id": 2}}', "ValueError")
    # When the analysis reads the DLQ with the options dlq list takes, in this process
    out = tmp_path / "report"
    said = ok(url, "analyze", "--queue", "orders-dlq", "--engine", "local", "--out", str(out),
              "--error-class", "KeyError")  # fmt: skip
    # it grouped those two only, and stored their patterns for `redrive start --pattern`
    assert "2 dead letters, 1 pattern ->" in said, said
    assigned = [json.loads(line) for line in (out / "assignments.jsonl").read_text().splitlines()]
    assert {a["message_id"] for a in assigned} == {acme, other}
    # and a narrower selection, by a body predicate, reads one
    said = ok(url, "analyze", "--queue", "orders-dlq", "--engine", "local", "--out", str(out),
              "--error-class", "KeyError", "--body", "customer.tenant == 'acme'")  # fmt: skip
    assert "1 dead letter," in said, said
    # A filter that selects nothing analyses nothing; a bad one is the server's refusal
    said = ok(url, "analyze", "--queue", "orders-dlq", "--engine", "local", "--out", str(out),
              "--error-class", "TypeError", "--no-post")  # fmt: skip
    assert "0 dead letters," in said, said
    bad = run(url, "analyze", "--queue", "orders-dlq", "--engine", "local", "--out", str(out),
              "--older-than", "soon")  # fmt: skip
    assert bad.exit_code == 1 and "older_than" in bad.output, bad.output
    # An export file was selected when it was written: a filter with --input is refused
    export = tmp_path / "all.jsonl"
    ok(url, "dlq", "export", "orders-dlq", "--out", str(export))
    refused = run(url, "analyze", "--input", str(export), "--error-class", "KeyError")
    assert refused.exit_code == 2 and "dlq export" in refused.output, refused.output
