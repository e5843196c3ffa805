"""The exception class a consumer gave as a field (`provenance.error_class`): the miner takes
it as the signature, so classes never share a pattern, and one class's letters share one
however their texts spell the class."""

from __future__ import annotations

import json
import string
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from deadletter.pipeline.batches import assign
from deadletter.pipeline.local import analyze_local
from deadletter.pipeline.mining import DEFAULT_THRESHOLD
from tests.pipeline.error_classes import CLASSES, spellings, structured

EXAMPLES = settings(max_examples=15, deadline=None)

_word = st.text(string.ascii_lowercase, min_size=3, max_size=9)
_class = st.builds(
    lambda modules, name, suffix: ".".join([*modules, name.capitalize() + suffix]),
    st.lists(_word, max_size=2),
    _word,
    st.sampled_from(["Error", "Exception"]),
)


@EXAMPLES
@given(
    st.lists(_class, min_size=2, max_size=3, unique=True),
    st.lists(_word, min_size=2, max_size=5),
    st.data(),
)
def test_letters_of_two_classes_never_share_a_pattern_and_one_class_shares_one(
    classes: list[str], words: list[str], data: st.DataObject
) -> None:
    # Given letters of each class whose texts are one message with other numbers, each
    # spelling the class qualified, bare or not at all
    errors, given = [], []
    for i in range(12 * len(classes)):
        error_class = classes[i % len(classes)]
        message = f"{' '.join(words)} {i} {' '.join(words[:1])} {i * 7919}"
        errors.append(data.draw(st.sampled_from(spellings(error_class, message))))
        given.append(error_class)
    # When they are mined
    patterns = assign(errors, [None] * len(errors), DEFAULT_THRESHOLD, given)
    # I expect one pattern per class
    by_class: dict[str, set[str]] = {}
    for error_class, pattern in zip(given, patterns, strict=True):
        by_class.setdefault(error_class, set()).add(pattern)
    assert all(len(ids) == 1 for ids in by_class.values()), by_class
    assert len(set(patterns)) == len(classes)


def test_texts_alike_are_split_by_class_and_the_report_shows_it(tmp_path: Path) -> None:
    # Given an export of letters of three classes, one message template among them all
    records = structured(90, seed=2)
    export = tmp_path / "export.jsonl"
    export.write_text("".join(json.dumps(r) + "\n" for r in records))
    # When it is analysed
    result = analyze_local(export, tmp_path / "out", keep_assignments=True)
    # I expect the letters with a message to be one pattern per class, whatever the spelling,
    # and those with the class alone another
    of_class: dict[tuple[str, bool], set[str]] = {}
    for r in records:
        key = (r["error_class"], r["error"] != r["error_class"])
        of_class.setdefault(key, set()).add(result.assignments[r["message_id"]])
    assert all(len(ids) == 1 for ids in of_class.values()), of_class
    assert len({pid for ids in of_class.values() for pid in ids}) == 2 * len(CLASSES)
    # and each pattern's summary and report row to name its class
    report = (tmp_path / "out" / "report.html").read_text()
    for p in result.patterns:
        error_class = next(
            r["error_class"] for r in records if r["message_id"] == p["example"]["message_id"]
        )
        assert p["signature"] == p["example"]["error_class"] == error_class
        row = report.split(f'<tr id="{p["id"]}">', 1)[1].split("</tr>", 1)[0]
        assert f"<small>{error_class}</small>" in row
