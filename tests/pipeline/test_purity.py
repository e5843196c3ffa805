"""A pattern holds one failure: values of several words, two spellings of one value and
wrapped causes do not split an event, and a variable place that hides two events is cut.

Each test builds the messages of one or two formats as programs write them, with generated
values, and checks which messages share a pattern.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from deadletter.pipeline.batches import assign
from deadletter.pipeline.mining import DEFAULT_THRESHOLD, with_context
from deadletter.pipeline.purity import (
    explain,
    raw_pattern,
    raw_template,
    raw_values,
    split_hidden,
)
from deadletter.pipeline.text import tokenize


def _groups(lines: list[str]) -> list[set[int]]:
    """Which lines share a pattern, as sets of line numbers."""
    patterns = assign([None] * len(lines), lines, DEFAULT_THRESHOLD)
    out: dict[str, set[int]] = {}
    for i, pattern in enumerate(patterns):
        out.setdefault(pattern, set()).add(i)
    return sorted(out.values(), key=min)


def _by_label(lines: list[str], labels: list[str]) -> bool:
    """Whether the patterns hold exactly the lines of each label."""
    expected: dict[str, set[int]] = {}
    for i, label in enumerate(labels):
        expected.setdefault(label, set()).add(i)
    return _groups(lines) == sorted(expected.values(), key=min)


RNG = random.Random(7)


def test_a_path_with_a_blank_in_its_file_name_is_one_value() -> None:
    # Given one event whose path holds blanks in folders and in the file's name
    paths = [
        "/mnt/shared/Finance Reports/q3 summary.csv",
        "/mnt/shared/data/report.csv",
        "/home/ann/My Files/a b.txt",
        "/var/data/x.csv",
        "/srv/in/raw file 2.json",
    ]
    lines = [f"Cannot open file {p} for reading" for p in paths * 4]
    # I expect one pattern
    assert len(_groups(lines)) == 1


def test_a_url_with_a_blank_in_a_segment_is_one_value() -> None:
    urls = [
        "s3a://acme-lake/raw events/dt=2026-11-28/",
        "s3a://acme-lake/raw/dt=2026-11-27/",
        "s3a://acme-lake/clean data/dt=2026-11-28/part-0001.parquet",
        "hdfs://nn:8020/user/x/y",
    ]
    lines = [f"Path does not exist: {u} (listing failed)" for u in urls * 5]
    assert len(_groups(lines)) == 1


def test_a_wrapped_cause_is_one_value_and_never_a_pattern_of_its_own() -> None:
    # Given three formats whose messages end in the wrapped cause of another error: one
    # cause in two of them, four in the third
    causes = [
        "java.io.IOException: No space left on device",
        "java.io.IOException: Broken pipe",
        "java.io.IOException: Connection reset by peer",
        "java.io.IOException: Stream closed",
    ]
    lines, labels = [], []
    for i in range(80):
        kind = i % 3
        cause = causes[RNG.randrange(4)] if kind == 2 else causes[0]
        if kind == 0:
            lines.append(f"Failed to write batch {RNG.randint(1, 999)} to sink: {cause}")
        elif kind == 1:
            lines.append(
                f"Task {RNG.randint(1, 99)} in stage {RNG.randint(1, 9)}.0 failed 4 times: {cause}"
            )
        else:
            lines.append(f"Could not commit offsets for partition {RNG.randint(1, 99)}: {cause}")
        labels.append(str(kind))
    # I expect one pattern per format, whatever the cause
    assert _by_label(lines, labels)


def test_a_value_quoted_in_backquote_and_apostrophe_is_one_value() -> None:
    # Given GNU's `%s' quoting around values of several spellings
    options = ["--foo", "--bar-baz", "-x", "--color=auto", "--no-verify", "--depth 3"]
    lines = [f"unknown option `{o}'" for o in options * 3]
    lines += [f"ambiguous argument `{r}': unknown revision" for r in ["HEAD~3", "main", "v1.2"] * 4]
    assert _by_label(lines, ["option"] * 18 + ["argument"] * 12)


def test_a_number_in_hex_or_in_decimal_is_one_value() -> None:
    lines = []
    for i in range(30):
        n = RNG.randint(1, 4096)
        size = hex(n) if i % 2 else str(n)
        lines.append(f"read {size} bytes from device {RNG.randint(1, 9)}")
    assert len(_groups(lines)) == 1


def test_two_ways_of_writing_a_time_are_one_value() -> None:
    times = [
        "2026-11-28T10:{:02d}:00Z",
        "Sat Nov 28 10:{:02d}:00 2026",
        "11/28/2026 10:{:02d}:11 AM",
        "2026/11/28 10:{:02d}:11",
        "28.11.2026 10:{:02d}:11",
    ]
    lines = [
        f"Lease expired at {times[i % 5].format(RNG.randint(0, 59))} for job {i}" for i in range(40)
    ]
    assert len(_groups(lines)) == 1


def test_a_class_tag_with_digits_names_its_error() -> None:
    # Given two error classes whose tags differ only by their digits, same words after
    lines = [f"[_LEGACY_ERROR_TEMP_2033] Unable to load table t{i}." for i in range(6)]
    lines += [f"[_LEGACY_ERROR_TEMP_2144] Unable to load table t{i}." for i in range(6, 12)]
    # I expect a pattern per tag, the tag kept in its template
    assert _by_label(lines, ["2033"] * 6 + ["2144"] * 6)
    assert tokenize(lines[0])[0] == "_LEGACY_ERROR_TEMP_2033"
    # while an id of one word and digits stays a variable
    assert tokenize("order ORD_48213 not found")[1] == "<ID>"


def _merged(lines: list[str], template: str) -> tuple[dict[str, str], dict[str, int]]:
    counts = Counter(" ".join(tokenize(line)) for line in lines)
    return {text: template for text in counts}, dict(counts)


def test_a_place_whose_few_values_differ_in_length_is_cut() -> None:
    # Given the template a greedy merge left over two formats, 1,642 and 29 messages
    formats = ["csv", "json", "orc", "avro", "xml", "delta"]
    lines = [f"The format is invalid: {formats[i % 6]}." for i in range(1642)]
    lines += [f"The repartition parameter {i} is invalid: cannot be null." for i in range(29)]
    found, counts = _merged(lines, "The <*> is invalid <*>")
    # When a hidden split is looked for
    cut = split_hidden(found, counts)
    # I expect the two formats apart, the place's values constants of each
    assert set(cut.values()) == {
        "The format is invalid <*>",
        "The repartition parameter <NUM> is invalid cannot be null",
    }


def test_two_places_that_take_one_value_each_for_the_other_are_cut() -> None:
    # Given `could not <*> file <QUOTED> <*>` holding three formats of one database
    lines = []
    for i in range(60):
        name = f'"base/{RNG.randint(1000, 9999)}/{RNG.randint(1000, 9999)}"'
        verb, detail = [("read", "short read"), ("write", "short write"), ("extend", "disk full")][
            i % 3
        ]
        lines.append(f"pq: could not {verb} file {name}: {detail}")
    found, counts = _merged(lines, "pq: could not <*> file <QUOTED> <*>")
    cut = split_hidden(found, counts)
    assert set(cut.values()) == {
        "pq: could not read file <QUOTED> short read",
        "pq: could not write file <QUOTED> short write",
        "pq: could not extend file <QUOTED> disk full",
    }


def test_a_variable_whose_values_come_and_go_freely_is_not_cut() -> None:
    # Given two user names and two hosts met in every combination
    lines = [
        f"session of {user} on {host} closed"
        for user in ("alice", "bob")
        for host in ("web", "db")
        for _ in range(5)
    ]
    found, counts = _merged(lines, "session of <*> on <*> closed")
    # I expect one pattern
    assert set(split_hidden(found, counts).values()) == {"session of <*> on <*> closed"}


@pytest.mark.parametrize("second", [["short read", "short write"], ["a b", "a b"]])
def test_each_pattern_says_how_sure_it_is(second: list[str]) -> None:
    # Given a pattern whose first place holds two words, each seen twice, that come with a
    # detail of their own in the second place, or with the same detail
    rows = [
        (f"could not {verb} the block {detail}", "", 2)
        for verb, detail in zip(["read", "write"], second, strict=True)
    ] + [(f"could not read the block {second[0]}", "", 4)]
    found = {(t, c): "could not <*> the block <*>" for t, c, _ in rows}
    impure = second[0] != second[1]
    # When it is explained
    sure = explain(found, rows)["could not <*> the block <*>"]
    # I expect a purity score, the flag, and a warning on the place only when it looks split
    first = sure["variables"][0]  # type: ignore[index]
    assert sure["impure"] is impure
    assert sure["purity"] == (0.75 if impure else 1.0)
    assert ("warning" in first) is impure
    assert first["values"] == ["read", "write"] and first["counts"] == [6, 2]


def test_a_variable_of_few_values_that_come_and_go_freely_is_not_flagged() -> None:
    # Given carriers and currencies, each recurring, in every combination
    rows = [
        (f"carrier {carrier} rejected parcel in {currency}", "", 5)
        for carrier in ("DHL", "UPS", "GLS")
        for currency in ("EUR", "USD")
    ]
    found = {(t, c): "carrier <*> rejected parcel in <*>" for t, c, _ in rows}
    sure = explain(found, rows)["carrier <*> rejected parcel in <*>"]
    assert sure["impure"] is False and sure["purity"] == 1.0


def test_typed_places_are_explained_too() -> None:
    rows = [("read <NUM> of <SIZE>", "", 4)]
    found = {("read <NUM> of <SIZE>", ""): "read <NUM> of <SIZE>"}
    variables = explain(found, rows)["read <NUM> of <SIZE>"]["variables"]
    assert [v["token"] for v in variables] == ["<NUM>", "<SIZE>"]  # type: ignore[index]


def test_the_template_with_its_punctuation_matches_the_raw_texts() -> None:
    # Given a pattern's template and the raw texts of its members
    raws = [
        'pq: could not read file "base/1/2": read only 0 of 8192 bytes',
        'pq: could not read file "base/77/9": read only 512 of 8192 bytes',
    ]
    template = " ".join(tokenize(raws[0]))
    template = template.replace(" ::", "")
    # When it is written as the first member writes it
    written = raw_template(template, raws[0])
    # I expect the punctuation kept and every member matched
    assert written == "pq: could not read file <QUOTED>: read only <NUM> of <SIZE>"
    assert all(raw_pattern(written).match(raw) for raw in raws)
    assert not raw_pattern(written).match("pq: could not write file x: short write")
    # and each typed place's real value read from a member, not its mask
    assert raw_values(template, raws[1]) == ['"base/77/9"', "512", "8192 bytes"]


def test_the_template_of_a_mined_set_keeps_its_constants() -> None:
    rows = [(" ".join(tokenize(f"Took {i} seconds to spawn")), "", 1) for i in range(5)]
    found = with_context(rows)
    assert set(found.values()) == {"Took <DUR> to spawn"}


def test_the_analysis_stores_how_sure_each_pattern_is(tmp_path: Path) -> None:
    from deadletter.pipeline.local import analyze_local

    # Given an export of one failure with a typed value
    export = tmp_path / "export.jsonl"
    with export.open("w") as fh:
        for i in range(3):
            record = {
                "message_id": f"m-{i}",
                "error": f'pq: could not read file "base/{i}/9": read only {i} of 8192 bytes',
            }
            fh.write(json.dumps(record) + "\n")
    # When it is analysed
    (pattern,) = analyze_local(export, tmp_path / "out").patterns
    # I expect its purity, its flag, its template with punctuation and real example values
    assert pattern["purity"] == 1.0 and pattern["impure"] is False
    assert pattern["raw_template"] == "pq: could not read file <QUOTED>: read only <NUM> of <SIZE>"
    assert [v["example"] for v in pattern["variables"]] == ['"base/0/9"', "0", "8192 bytes"]


def test_formats_that_end_with_one_name_of_several_words_stay_apart() -> None:
    # Given seven messages of one database driver, each its own failure, that all end with
    # the same type name of four words, and each seen three times
    formats = [
        "pq: invalid input syntax for type timestamp with time zone",
        "pq: cannot cast type integer to timestamp with time zone",
        'pq: column "due" is of type timestamp with time zone',
        "pq: operator does not exist: text = timestamp with time zone",
        "pq: function date_trunc(unknown, text) does not exist for timestamp with time zone",
        "pq: value out of range for timestamp with time zone",
        "pq: could not convert text to timestamp with time zone",
    ]
    lines = [f for f in formats for _ in range(3)]
    # I expect seven patterns: phrases that each recur name events, however many there are
    assert _by_label(lines, lines)
    # while seven phrases seen once each, between the same words, are free text: one pattern
    assert len(_groups(formats)) == 1


def test_a_word_after_a_variable_that_ends_two_messages_is_a_format_of_its_own() -> None:
    # Given two formats that start alike: the types of two columns, and the kinds of two
    # objects with the word `objects` after the second
    types = ["TimestampType", "StringType", "DateType", "LongType", "IntegerType", "DoubleType"]
    lines, labels = [], []
    for i in range(8):
        lines.append(f"cannot combine {types[i % 6]} and {types[(i * 5 + 1) % 6]}")
        labels.append("types")
    for left, right in [("DataFrame", "dict"), ("DataFrame", "ndarray"), ("DataFrame", "ndarray"),
                        ("Series", "list"), ("Series", "ndarray")]:  # fmt: skip
        lines.append(f"cannot combine {left} and {right} objects")
        labels.append("objects")
    # I expect two patterns: `objects` is not part of a phrase where the type usually goes
    assert _by_label(lines, labels)
