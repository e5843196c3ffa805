"""Strict JSON at the edge: what RFC 8259 refuses, and what could not be served again."""

from __future__ import annotations

import pytest

from deadletter.api.strict_json import MAX_DEPTH, InvalidJson, loads


@pytest.mark.parametrize(
    "text",
    [
        '{"body": NaN}',
        '{"body": Infinity}',
        '{"body": -Infinity}',
        '{"rate": 1e400}',
        '{"since": -1e400}',
        '{"body": "\\ud800"}',
        '{"\\udfff": 1}',
        "[" * 100_000 + "]" * 100_000,
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "1" * 5000,
        "{",
    ],
)
def test_refused(text: str) -> None:
    with pytest.raises(InvalidJson):
        loads(text)


def test_invalid_utf8_refused() -> None:
    with pytest.raises(InvalidJson, match="UTF-8"):
        loads(b'{"a": "\xff"}')


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1.5e300}', {"a": 1.5e300}),
        ('{"a": "\\ud83d\\ude00"}', {"a": "\U0001f600"}),  # a surrogate pair is one character
        ("[" * MAX_DEPTH + "]" * MAX_DEPTH, eval("[" * MAX_DEPTH + "]" * MAX_DEPTH)),
        ('{"x": [1, 2, {"y": null}]}', {"x": [1, 2, {"y": None}]}),
        ('"\\u0000"', "\x00"),
    ],
)
def test_accepted(text: str, value: object) -> None:
    assert loads(text) == value
