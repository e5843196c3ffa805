"""Masking, tokenising, exception signatures and key paths (no Spark)."""

from __future__ import annotations

import json
from typing import Any

from deadletter.pipeline.mining import mine, mine_all, pattern_id, with_context
from deadletter.pipeline.text import (
    exception_signature,
    key_paths,
    mask,
    mining_parts,
    tokenize,
)


def test_each_kind_of_variable_is_masked_with_its_own_placeholder() -> None:
    text = (
        "GET https://api.example.com/v1/x?id=3 from 10.0.0.12:8080 for ana@example.org "
        "req 3f2a9c1e-7b4d-4e2a-9c1e-7b4d4e2a9c1e at 2026-11-22T15:04:05.123Z "
        "read /var/lib/app/data.db addr 0x7ffd5e8c took 532ms value 'abc 12' count 42"
    )
    assert mask(text) == (
        "GET <URL> from <IP> for <EMAIL> req <UUID> at <TS> read <PATH> addr <HEX> "
        "took <DUR> value <QUOTED> count 42"
    )
    assert tokenize(text)[-1] == "<NUM>"


def test_quoted_identifiers_are_kept_because_they_name_the_bug() -> None:
    assert mask("KeyError: 'customer'") == "KeyError: 'customer'"
    assert mask("missing field \"customer.id\" in 'ab 1'") == (
        'missing field "customer.id" in <QUOTED>'
    )


def test_tokens_with_digits_become_ids_and_punctuation_is_dropped() -> None:
    assert tokenize("order ord-48213 failed: weight 31.5kg, hex deadbeef42") == [
        "order",
        "<ID>",
        "failed",
        "::",  # where the last ": " was: the miner decides whether what follows varies
        "weight",
        "<ID>",
        "hex",
        "<HEX>",
    ]


def test_python_signature_is_type_and_innermost_frames_without_line_numbers() -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/app/orders/worker.py", line 88, in handle\n'
        "    total = price_order(order)\n"
        '  File "/usr/lib/python3.11/site-packages/orders/pricing.py", line 41, in price\n'
        '    customer_id = order["customer"]["id"]\n'
        "KeyError: 'customer'"
    )
    signature, headline = exception_signature(trace)
    assert signature == "KeyError @ orders.pricing:price < orders.worker:handle"
    assert headline == "KeyError: 'customer'"
    other_lines = trace.replace("line 88", "line 90").replace("line 41", "line 7")
    assert exception_signature(other_lines)[0] == signature


def test_python_chained_traceback_uses_the_last_exception() -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/app/a.py", line 1, in first\n'
        "    x()\n"
        "ValueError: bad\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/app/b.py", line 2, in second\n'
        "    y()\n"
        "RuntimeError: worse"
    )
    assert exception_signature(trace) == ("RuntimeError @ b:second", "RuntimeError: worse")


def test_java_signature_uses_root_cause_and_masks_lambdas_and_lines() -> None:
    trace = (
        "java.lang.RuntimeException: wrapper\n"
        "\tat com.acme.Worker.run(Worker.java:10)\n"
        "Caused by: java.lang.NullPointerException: x is null\n"
        "\tat com.acme.Label.render(Label.java:88)\n"
        "\tat com.acme.Worker.lambda$handle$3(Worker.java:57)\n"
        "\tat com.acme.Pool$$Lambda$41/0x0000000800c0b000.accept(Unknown Source)\n"
        "\tat java.base/java.lang.Thread.run(Thread.java:833)\n"
    )
    signature, headline = exception_signature(trace)
    assert signature == (
        "java.lang.NullPointerException @ com.acme.Label.render < "
        "com.acme.Worker.lambda$handle < com.acme.Pool.accept"
    )
    assert headline == "java.lang.NullPointerException: x is null"


def test_plain_error_text_has_no_signature() -> None:
    assert exception_signature("timeout after 5s") == ("", "timeout after 5s")


def test_key_paths_name_nested_keys_with_types() -> None:
    body = json.dumps({"customer": {"id": "c-1"}, "items": [{"sku": "A", "qty": 2}], "n": None})
    assert key_paths(body) == [
        "customer.id:string",
        "customer:object",
        "items:array",
        "items[].qty:number",
        "items[].sku:string",
        "n:null",
    ]
    assert key_paths("not json {") == []


def test_mining_merges_sequences_that_differ_only_in_variable_tokens() -> None:
    seqs = [
        (["carrier", "DHL", "rejected", "parcel", "<ID>"], 5),
        (["carrier", "UPS", "rejected", "parcel", "<ID>"], 3),
        (["carrier", "GLS", "rejected", "parcel", "<ID>"], 1),
        (["queue", "orders", "is", "paused", "now"], 2),
    ]
    templates = mine(seqs)
    assert {" ".join(t) for t in templates.values()} == {
        "carrier <*> rejected parcel <ID>",
        "queue orders is paused now",
    }


def test_mining_does_not_depend_on_input_order() -> None:
    seqs = [
        (f"user u{i % 7} login failed from host h{i % 3} code {i % 2}".split(), 1)
        for i in range(40)
    ]
    forward = mine(seqs)
    backward = mine(list(reversed(seqs)))
    assert forward == backward


def test_pattern_id_is_a_stable_hash_of_template_and_signature() -> None:
    assert pattern_id("KeyError 'customer'", "KeyError @ a:b") == pattern_id(
        "KeyError 'customer'", "KeyError @ a:b"
    )
    assert pattern_id("x", "") != pattern_id("x", "y")
    assert pattern_id("x", "").startswith("p-") and len(pattern_id("x", "")) == 14


def test_variables_that_span_tokens_are_one_placeholder() -> None:
    assert tokenize(
        "proxy.cse.cuhk.edu.hk:5070 close, 1190 bytes (1.16 KB) sent, 0 bytes received, "
        "lifetime <1 sec"
    ) == ["<IP>", "close", "<SIZE>", "sent", "<SIZE>", "received", "lifetime", "<DUR>"]
    assert tokenize("lifetime 02:19") == ["lifetime", "<DUR>"]
    assert tokenize("interface en0 (FE80:0000:0000:0000:C6B3:01FF:FECD:467F)") == [
        "interface",
        "<ID>",
    ]


def test_a_run_of_variables_is_one_placeholder_and_the_request_method_stays() -> None:
    line = '10.11.21.122,10.11.10.1 "GET /openstack/2013-10-17 HTTP/1.1" status: 200 len: 157'
    assert tokenize(line) == ["<IP>", "GET", "<PATH>", "status", "<NUM>", "len", "<NUM>"]
    assert tokenize("name bn782 bn783 bn784") == tokenize("name bn910 bn911")


def _texts(found: dict[str, str]) -> set[str]:
    return set(found.values())


def test_templates_of_different_lengths_with_the_same_constants_are_one() -> None:
    # Given one event whose variable part is one token long, or two (a host and a word)
    seqs = [
        ("resolve failed for <ID> now", 3),
        ("resolve failed for <ID> alpha now", 1),
        ("resolve failed for <ID> beta now", 1),
        ("resolve failed for <ID> gamma now", 1),
    ]
    # I expect one template for all of them
    assert _texts(mine_all(seqs)) == {"resolve failed for <*> now"}


def test_a_position_holding_two_plain_words_names_two_events() -> None:
    seqs = [
        ("Block <ID> stored as bytes in memory", 5),
        ("Block <ID> stored as values in memory", 4),
        ("IllegalState carrier DHL rejected parcel <ID>", 2),
        ("IllegalState carrier UPS rejected parcel <ID>", 2),
        ("IllegalState carrier GLS rejected parcel <ID>", 2),
    ]
    assert _texts(mine_all(seqs)) == {
        "Block <ID> stored as bytes in memory",
        "Block <ID> stored as values in memory",
        "IllegalState carrier <*> rejected parcel <ID>",
    }


def test_http_methods_are_never_merged() -> None:
    # Three plain words in one position would read as a variable; methods never do.
    seqs = [
        ("<IP> GET <PATH> status <NUM>", 9),
        ("<IP> POST <PATH> status <NUM>", 1),
        ("<IP> DELETE <PATH> status <NUM>", 1),
    ]
    assert len(_texts(mine_all(seqs))) == 3


def test_the_description_splits_a_generic_error_and_is_shown() -> None:
    # Given one generic error over two different descriptions, and a specific error whose
    # description never changes
    rows = [
        ("HandlerError failed", "timeout after <NUM> ms", 4),
        ("HandlerError failed", "quota exceeded for <ID>", 2),
        ("KeyError 'customer'", "handler raised", 3),
    ]
    found = with_context(rows)
    # I expect the generic error split by description, and the specific one left alone
    assert set(found.values()) == {
        "HandlerError failed :: timeout after <NUM> ms",
        "HandlerError failed :: quota exceeded for <ID>",
        "KeyError 'customer'",
    }


def test_the_description_counts_when_the_error_has_a_headline() -> None:
    assert mining_parts("TimeoutError: boom", "timeout after 5 ms") == (
        "",
        "TimeoutError: boom",
        "timeout after 5 ms",
    )
    assert mining_parts(None, "timeout after 5 ms") == ("", "timeout after 5 ms", "")


def test_a_given_class_is_the_signature_and_leaves_the_headline() -> None:
    # However the text spells the class, or another name that leads it
    trace = 'Traceback (most recent call last):\n  File "/app/w.py", line 3, in f\nValueError: x'
    assert mining_parts("builtins.ValueError: total=-3", None, "ValueError") == (
        "ValueError",
        "total=-3",
        "",
    )
    assert mining_parts(trace, "d", "builtins.ValueError")[:2] == ("builtins.ValueError", "x")
    assert mining_parts("HandlerError: x", None, " ValueError ") == (
        "ValueError",
        "HandlerError: x",
        "",
    )
    # and the class alone leaves the description to mine
    assert mining_parts("ValueError", "bad total", "ValueError") == ("ValueError", "bad total", "")
    assert mining_parts("x", None, "") == ("", "x", "")


def test_a_ctime_date_inside_a_message_is_one_variable() -> None:
    # Given one event whose lines carry dates as ctime() and Java write them, of different
    # days and widths
    lines = [
        "connection from 10.1.2.3 () at Fri Jul  1 07:57:30 2005",
        "connection from 10.1.2.4 () at Sat Jul 16 10:01:02 2005",
        "connection from 10.1.2.5 () at Thu Aug 04 15:29:45 PDT 2005",
    ]
    # I expect the same tokens, the date one placeholder
    assert {" ".join(tokenize(line)) for line in lines} == {"connection from <IP> at <TS>"}


def test_words_that_alternate_in_several_events_are_a_variable() -> None:
    # Given two events that each carry one of the same two user names
    failed = [("Failed password for root from <IP> port <NUM>", 5)]
    failed += [("Failed password for git from <IP> port <NUM>", 1)]
    pam = [("authentication failure rhost <IP> user root", 4)]
    pam += [("authentication failure rhost <IP> user git", 1)]
    # When only one event is seen, two plain words read as two events (`bytes` / `values`)
    assert len(set(mine_all(failed).values())) == 2
    # I expect the same two words, alternating in both events, to be read as a name
    templates = mine_all(failed + pam)
    assert set(templates.values()) == {
        "Failed password for <*> from <IP> port <NUM>",
        "authentication failure rhost <IP> user <*>",
    }


def _real_lines() -> list[str]:
    import csv
    from pathlib import Path

    lines = []
    for path in sorted((Path(__file__).parent.parent / "data" / "logs").glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            lines += [row["Content"] for row in csv.DictReader(fh)]
    return lines


CORNERS = [
    "12:30 done",
    "a:1 b",
    "fe80::1:2:3:4 up",
    "host-a.example:8080 refused",
    "10 B sent, 2 KB (2.0 KB) kept, 3 bytes",
    "5 s, <1 sec, 3µs, 7 h, 2m",
    "Thu Aug 04 15:29:45 PDT 2005 x",
    "aa:bb:cc:dd:ee:ff",
    "2026-11-22 15:04 start",
]


def test_a_mask_is_skipped_only_where_it_could_not_match() -> None:
    import re

    from deadletter.pipeline import rules

    # Given every mask that has a gate, and real lines plus corner cases
    gated = [(re.compile(p), re.compile(g)) for p, _, _, g in rules.MASKS if g]
    assert len(gated) >= 8
    # I expect each text a mask matches to hold a match of its gate: skipping is then exact
    for text in _real_lines() + CORNERS:
        for pattern, gate in gated:
            if pattern.search(text):
                assert gate.search(text), (pattern.pattern, gate.pattern, text)


def test_the_token_cache_changes_no_token_even_when_it_fills_up(monkeypatch: Any) -> None:
    from deadletter.pipeline import text

    lines = _real_lines()[:3000] + CORNERS
    text._TOKENS_SEEN.clear()
    expected = [tokenize(line) for line in lines]
    # When the cache holds three tokens at most, it is cleared over and over
    monkeypatch.setattr(text, "_TOKENS_KEPT", 3)
    text._TOKENS_SEEN.clear()
    assert [tokenize(line) for line in lines] == expected
    assert len(text._TOKENS_SEEN) <= 3
