"""text.tokenize splits first and masks token by token where no mask can cross a separator:
it must give the very tokens of masking the whole text first (tokenize_oracle)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from deadletter.pipeline import text
from deadletter.pipeline.corpus import generate
from tests.pipeline import error_formats, tokenize_oracle
from tests.pipeline.conftest import masks_taken_away

DATA = Path(__file__).parent.parent / "data"


def _lines() -> list[str]:
    lines = []
    for path in sorted((DATA / "logs").glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            lines += [row["Content"] for row in csv.DictReader(fh)]
    with (DATA / "formats" / "formats.jsonl").open() as fh:
        lines += [json.loads(row)["format"] for row in fh]
    for half in ("tuning", "held-out"):
        for contents, _labels in error_formats.generate(half).values():
            lines += contents
    lines += CORNERS
    for record in generate(3000, seed=1):
        _, headline, context = text.mining_parts(record["error"], record["description"])
        lines += [headline, context]
    return lines


# Where masking one token alone would not do: a size's rounded value glued to a word, a path
# or a duration with a blank inside, an address after `::`.
CORNERS = [
    "5KB (1KB)x",
    "5KB (1KB).x",
    "size 5 KB (1 KB)x y",
    "read /home/a b/c.txt",
    "took 5 ms",
    "held 3 h",
    "a::dead:beef:cafe:babe b",
    "at 2026-11-22 15:04:05 x",
    "GET /x HTTP/1.1 200",
]


def test_every_real_and_generated_line_has_the_tokens_of_masking_the_whole_text() -> None:
    # Given every Loghub line, every error format (as written and filled) and dead letters
    lines = _lines()
    text.clear_caches()
    # I expect the tokens of masking each whole text first, seen twice (the cache holds)
    for line in lines + lines[::-1]:
        assert text.tokenize(line) == tokenize_oracle.tokenize(line), line
    # and most lines to go the way that splits first
    assert sum(not text._spans(line) for line in lines) > len(lines) / 3


# Pieces of text that come near every mask's edges: numbers, units, hex, dates, paths,
# addresses, quotes and each separator.
_PIECES = [
    *("0", "7", "42", "2026", "0x1f", "0xZ", "3.5", "-12", "+3", "1,5", "99%", "10.0.0.1"),
    *("deadbeef42", "DEADBEEF", "abc12345", "3f2a9c1e-7b4d-4e2a-9c1e-7b4d4e2a9c1e", "ord-48213"),
    *("ms", "s", "sec", "h", "hours", "KB", "MiB", "B", "bytes", "µs", "m", "kg", "held"),
    *("12:30", "07:57:30", "2026-11-22", "T15:04:05", "Z", "Fri", "Jul", "PDT", ":8080"),
    *("fe80", "::1", "aa:bb:cc:dd", "host-a.example", "a@b.org", "http://x/y?z=1", "GET"),
    *("/var/lib", "/a b/", "C:\\x y\\z", "Old Projects", "api v2", "x/", "<5", ">", "<IP>"),
    *("'", '"', "'abc 12'", '"x.y"', "(", ")", "[", "]", "{", "}", "|", ",", ";", "=", ":"),
    *(".", "!", "?", "`", "-", "_", "word", "Error", "failed", "é", "٣"),
    *("5KB", "(1KB)", "(2.0 KB)", "(2 KB)x", "1190 bytes", "<1 sec"),
]
_SEPARATORS = ["", " ", "  ", "\t", ": ", ", ", "/", ".", "-", ":", "\n"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(_SEPARATORS)), max_size=12))
def test_generated_texts_have_the_tokens_of_masking_the_whole_text(
    pieces: list[tuple[str, str]],
) -> None:
    line = "".join(piece + sep for piece, sep in pieces)
    # I expect a text that no mask crosses to give the same tokens split first
    if not text._spans(line):
        split_first: list[str] = []
        text._split_tokens_of(line, split_first)
        whole: list[str] = []
        tokenize_oracle._tokens_of(line, whole)
        assert split_first == whole
    assert text.tokenize(line) == tokenize_oracle.tokenize(line)


def test_tokens_masked_before_under_other_masks_are_not_reused() -> None:
    line = "request 28b7a624a67d6393 took 12ms"
    masked = ["request", "<HEX>", "took", "<DUR>"]
    assert text.tokenize(line) == masked
    assert text._CLASS_SEEN["11ms"] == "<DUR>"  # looked up by its shape
    # When the masks are taken away, the tokens seen before are masked again
    with masks_taken_away():
        assert text.tokenize(line) == ["request", "<ID>", "took", "<ID>"]
    # and again when they are back
    assert text.tokenize(line) == masked
