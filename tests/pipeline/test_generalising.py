"""Rules of the miner that must hold on software it was not tuned on (error-message formats).

Each test builds the messages of one or two events the way programs write them, with values
drawn from generated pools, and checks which messages share a pattern. The values are
generated (hypothesis), so a rule that holds for one spelling only fails here.
"""

from __future__ import annotations

import string
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from deadletter.pipeline.batches import assign
from deadletter.pipeline.mining import DEFAULT_THRESHOLD
from deadletter.pipeline.text import tokenize

EXAMPLES = settings(max_examples=10, deadline=None)

_word = st.text(string.ascii_lowercase, min_size=3, max_size=9)
# Names as programs, loggers and keys are spelt: words joined by `-`, `_` or `.`.
_name = st.builds(
    lambda parts, sep: sep.join(parts),
    st.lists(_word, min_size=1, max_size=3),
    st.sampled_from(["-", "_", "."]),
)
# Free text: an error text, a phrase; several words, of different lengths.
_phrase = st.lists(_word, min_size=2, max_size=6).map(" ".join)


def _groups(lines: list[str]) -> list[set[int]]:
    """Which lines share a pattern, as sets of line numbers."""
    patterns = assign([None] * len(lines), lines, DEFAULT_THRESHOLD)
    out: dict[str, set[int]] = {}
    for i, pattern in enumerate(patterns):
        out.setdefault(pattern, set()).add(i)
    return sorted(out.values(), key=min)


def _one_pattern(lines: list[str]) -> bool:
    return len(_groups(lines)) == 1


@EXAMPLES
@given(st.lists(_name, min_size=6, max_size=12, unique=True), st.data())
def test_a_program_name_in_front_does_not_split_an_event(
    programs: list[str], data: st.DataObject
) -> None:
    # Given one event reported by many programs, `<program>: failed to reset ... UID <n>`
    lines = [
        f"{program}: failed to reset the entry of UID {data.draw(st.integers(0, 9999))}"
        for program in programs
    ]
    # I expect one pattern whatever the program
    assert _one_pattern(lines)


def test_a_name_in_front_that_recurs_names_its_own_event() -> None:
    # Given two leading words, each seen many times before one same message
    lines = [
        f"{level}: disk {n} is almost full" for level in ("Error", "Warning") for n in range(5)
    ]
    # I expect two patterns, one per word
    assert _groups(lines) == [set(range(5)), set(range(5, 10))]


@EXAMPLES
@given(st.lists(_phrase, min_size=6, max_size=10, unique=True))
def test_free_text_after_a_colon_is_one_variable(details: list[str]) -> None:
    # Given one event whose detail, after the last colon, is free text of several words
    lines = [f"Error in processing template files: {detail}" for detail in details]
    # I expect one pattern
    assert _one_pattern(lines)


def test_endings_that_each_recur_are_events_of_their_own() -> None:
    # Given one start with three endings after its colon, each seen several times
    endings = ["matching quote", "end of here-document", "closing bracket"]
    lines = [f"unexpected EOF while looking for: {e}" for e in endings for _ in range(4)]
    # I expect one pattern per ending: a frequent ending does not swallow the others
    assert _groups(lines) == [set(range(4)), set(range(4, 8)), set(range(8, 12))]


# Texts of different sources: no word in two of them, each of its own length (texts of one
# length are the positional rules' to judge).
_texts = st.lists(_word, min_size=27, max_size=40, unique=True).flatmap(
    lambda words: st.permutations(range(2, 8)).map(
        lambda sizes: [
            " ".join(words[sum(sizes[:i]) : sum(sizes[: i + 1])]) for i in range(len(sizes))
        ]
    )
)


@EXAMPLES
@given(_texts, _name)
def test_free_text_inside_a_message_is_one_variable(phrases: list[str], name: str) -> None:
    # Given one event whose error text, of varying length, follows a sentence, no colon
    lines = [f'Writer "{name}" not found. {phrase}' for phrase in phrases]
    # I expect one pattern
    assert _one_pattern(lines)


@EXAMPLES
@given(st.lists(_name, min_size=6, max_size=10, unique=True))
def test_a_variable_among_the_first_words_does_not_split_an_event(names: list[str]) -> None:
    # Given two events that differ in one word, each with many names in their second place
    extension = [f"No {name} extension was found" for name in names]
    attribute = [f"No {name} attribute was found" for name in names]
    # I expect one pattern per event: the names vary, `extension` / `attribute` name events
    n = len(names)
    assert _groups(extension + attribute) == [set(range(n)), set(range(n, 2 * n))]


def test_words_one_apart_that_each_recur_are_separate_events() -> None:
    # Given `Could not set sename` / `serange` and `No such interface` / `property` / `method`
    lines = [f"Could not set {w} for user{n}" for w in ("sename", "serange") for n in range(4)]
    lines += [f'No such {w} "{n}"' for w in ("interface", "property") for n in ("a", "b", "c")]
    # I expect one pattern per word
    sizes = Counter(len(g) for g in _groups(lines))
    assert sizes == {4: 2, 3: 2}


@EXAMPLES
@given(st.lists(_word, min_size=2, max_size=4), st.lists(_word, min_size=1, max_size=3))
def test_a_path_with_blanks_in_its_folders_is_one_variable(
    folders: list[str], spaced: list[str]
) -> None:
    # Given a path whose folder names hold blanks
    path = "/" + "/".join([*folders[:-1], " ".join(spaced), *folders[-1:]]) + ".yaml"
    # I expect one placeholder for it, and the words after it kept
    assert tokenize(f"File at path {path} is not a file.") == [
        "File",
        "at",
        "path",
        "<PATH>",
        "is",
        "not",
        "a",
        "file",
    ]


def test_each_pattern_names_its_variables_with_values_from_its_members() -> None:
    from deadletter.pipeline.mining import with_context
    from deadletter.pipeline.purity import explain
    from deadletter.pipeline.report import render

    # Given one event reported by four programs, one of them three times
    programs = ["useradd", "useradd", "useradd", "crond", "gzip", "mailer"]
    lines = [
        f"{p}: cannot open the lock file of queue {q}"
        for p, q in zip(programs, "abcdef", strict=True)
    ]
    counts = Counter(" ".join(tokenize(line)) for line in lines)
    rows = [(text, "", n) for text, n in counts.items()]
    found = with_context(rows)
    # When the pattern is explained
    (template,) = set(found.values())
    variables = explain(found, rows)[template]["variables"]
    # I expect each variable with its most frequent values first and how many there are
    assert template == "<*>: cannot open the lock file of queue <*>"
    assert variables[0] == {
        "variable": 1,
        "token": "<*>:",
        "values": ["useradd", "crond", "gzip"],
        "counts": [3, 1, 1],
        "distinct": 4,
    }
    assert variables[1]["values"] == ["a", "b", "c"] and variables[1]["distinct"] == 6
    # and the report to show them beside the template
    page = render([_pattern(template, variables)], 6)
    assert (
        "<code>useradd</code> &times;3, <code>crond</code> &times;1, <code>gzip</code> &times;1"
        " &hellip; (4 values)"
    ) in page


def _pattern(template: str, variables: list[dict[str, object]]) -> dict[str, object]:
    return {
        "id": "p-1",
        "template": template,
        "variables": variables,
        "signature": "",
        "count": 6,
        "source_queues": ["q"],
        "reasons": ["rejected"],
        "first_seen": None,
        "last_seen": None,
        "hourly_counts": [],
        "sample_message_ids": [],
        "example": None,
        "key_paths_in_all": [],
        "key_paths_missing": [],
        "overrepresented_attributes": [],
    }


@EXAMPLES
@given(
    st.lists(_name, min_size=6, max_size=10, unique=True),
    st.lists(st.lists(_word, min_size=2, max_size=4).map(" ".join), min_size=2, max_size=3),
)
def test_a_phrase_where_a_name_usually_goes_is_a_value_of_that_variable(
    names: list[str], phrases: list[str]
) -> None:
    # Given one event whose value is a name most of the time, sometimes a phrase of several
    # words (shorter than the sentence), each phrase seen twice, and once nothing at all
    values = names + [p for p in phrases for _ in range(2)] + [""]
    lines = [f"{value} is not a valid range." for value in values]
    # I expect one pattern
    assert _one_pattern(lines)


def test_a_variable_whose_few_values_each_recur_takes_no_phrase() -> None:
    # Given one sentence naming two message kinds, each seen many times, and a second event
    # where a list of kinds of several words stands in their place
    lines = [
        f'Expected ASGI message "{kind}", but got {n}'
        for kind in ("websocket.connect", "websocket.receive")
        for n in ("'int'", "'str'", "'dict'")
    ]
    lines += [f'Expected ASGI message "a" or "b", but got {n}' for n in ("'int'", "'str'")]
    # I expect the second event apart from the first
    assert [len(g) for g in _groups(lines)] != [len(lines)]


def test_two_programs_in_front_each_seen_once_do_not_split_an_event() -> None:
    # Given one message reported once by one program and once by another
    lines = [
        "ledger: Unable to calculate correct timezone offset for 'timeout'",
        "thumbnailer: Unable to calculate correct timezone offset for 'N/A'",
    ]
    # I expect one pattern: names that do not recur are a variable's values
    assert _one_pattern(lines)


def test_a_long_text_in_a_place_known_to_hold_free_text_is_one_more_value() -> None:
    # Given one event with a name and an error text of two or three words, and twice an error
    # text longer than the rest of the message
    names = ["user", "retry_mode", "page-size", "order.total", "sku", "tenant"]
    texts = ["Broken pipe", "timed out", "Permission denied", "database is locked"]
    lines = [f'Writer "{n}" not found. {texts[i % len(texts)]}' for i, n in enumerate(names)]
    lines += ['Writer "sku" not found. the connection was closed by the server'] * 2
    # I expect one pattern
    assert _one_pattern(lines)


def test_a_value_with_a_number_among_its_words_fits_a_variable_known_to_hold_phrases() -> None:
    # Given one event whose value is a name, a phrase, or words with a number among them
    values = ["customer_id", "order.total", "timeout", "sku", "tenant", "user"]
    values += ["Lorem ipsum dolor", "yes please"] * 2 + ["abc 12"]
    lines = [f"'{v}' is not one of {v}" for v in values]
    # I expect one pattern
    assert _one_pattern(lines)


def test_two_names_in_one_place_that_each_recur_are_separate_events() -> None:
    # Given one sentence naming one of two message kinds, each kind seen in several messages
    lines = [
        f'Expected ASGI message "{kind}", but got {n}'
        for kind in ("websocket.connect", "websocket.http.response.body")
        for n in ("'int'", "'str'", "'dict'", "'bytes'")
    ]
    # I expect one pattern per kind: values that each recur consistently are constants
    assert _groups(lines) == [set(range(4)), set(range(4, 8))]


def test_a_member_with_nothing_in_a_variable_is_explained_by_an_empty_value() -> None:
    from deadletter.pipeline.mining import with_context
    from deadletter.pipeline.purity import explain

    # Given one event whose value is a name, a phrase, or nothing at all
    values = ["aa", "bb", "cc", "dd", "ee", "ff", "Lorem ipsum dolor", ""]
    counts = Counter(" ".join(tokenize(f"{v} is not a valid range.")) for v in values)
    rows = [(text, "", n) for text, n in counts.items()]
    found = with_context(rows)
    # When the pattern is explained
    (template,) = set(found.values())
    (variable,) = explain(found, rows)[template]["variables"]
    # I expect every member's value counted, the empty one too
    assert template == "<*> is not a valid range"
    assert variable["distinct"] == len(values)
