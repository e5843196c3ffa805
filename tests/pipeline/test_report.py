"""The HTML report as a person reads it: one busy hour, bodies, dead letters without text."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from deadletter.pipeline.report import label, render
from deadletter.terminal import NOT_SHOWN


def _pattern(**over: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "id": "p-000000000001",
        "template": "KeyError <QUOTED>",
        "signature": "",
        "count": 3,
        "source_queues": ["orders"],
        "reasons": ["rejected"],
        "first_seen": "2026-11-20T10:05:00.000Z",
        "last_seen": "2026-11-20T10:55:00.000Z",
        "hourly_counts": [["2026-11-20T10:00:00.000Z", 3]],
        "sample_message_ids": ["m-1"],
        "example": {"message_id": "m-1", "body": json.dumps({"order": {"id": "o-1"}})},
        "key_paths_in_all": [],
        "key_paths_missing": [],
        "overrepresented_attributes": [],
    }
    return {**p, **over}


def test_dead_letters_all_in_one_hour_still_draw_a_line_across_the_chart() -> None:
    html = render([_pattern()], 3)
    (points,) = re.findall(r'<polyline[^>]*points="([^"]+)"', html)
    xs = {float(xy.split(",")[0]) for xy in points.split()}
    # A quiet hour on each side: three distinct x positions, the busy one in the middle.
    assert len(xs) == 3
    assert "2026-11-20T09:00:00.000Z" in html and "2026-11-20T11:00:00.000Z" in html


def test_the_example_body_is_shown_once_encoded() -> None:
    html = render([_pattern()], 3)
    assert "&quot;order&quot;: {" in html
    assert "\\&quot;" not in html  # no JSON text inside a JSON string


def test_a_pattern_without_error_text_is_labelled_by_its_reasons() -> None:
    p = _pattern(template="", reasons=["max_claims"])
    assert label(p) == "(no error text: max_claims)"
    assert "(no error text: max_claims)" in render([p], 3)
    assert label(_pattern()) == "KeyError <QUOTED>"


def test_a_report_of_one_busy_hour_from_the_command_shows_bodies_once_encoded(
    tmp_path: Any,
) -> None:
    from click.testing import CliRunner

    from deadletter.cli.analyze import analyze

    # Given an export as `deadletter dlq export` writes it, every dead letter within one hour
    export = tmp_path / "dead.jsonl"
    with export.open("w", encoding="utf-8") as fh:
        for i in range(12):
            record = {
                "message_id": f"m-{i:02d}",
                "source_queue": "orders",
                "reason": "rejected",
                "description": "handler raised",
                "error": f"KeyError: 'customer' in order ord-{i}",
                "dead_lettered_at": f"2026-11-20T10:{i * 4:02d}:00.000Z",
                "body": {"order": {"id": f"o-{i}", "note": "café"}},
                "attributes": {"tenant": {"type": "String", "value": "t-1"}},
            }
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    # When the command analyses it (a small export: in this process)
    result = CliRunner().invoke(analyze, ["--input", str(export), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    # I expect the hour drawn as a peak between two quiet hours
    (points,) = re.findall(r'<polyline[^>]*points="([^"]+)"', html)
    assert len({xy.split(",")[0] for xy in points.split()}) == 3
    assert "2026-11-20T09:00:00.000Z" in html and "2026-11-20T11:00:00.000Z" in html
    # and the example's body as JSON once: an object in the page, JSON text in patterns.json
    assert "&quot;order&quot;: {" in html and "café" in html
    assert "\\&quot;" not in html
    (pattern,) = json.loads((tmp_path / "r" / "patterns.json").read_text())["patterns"]
    assert pattern["hourly_counts"] == [["2026-11-20T10:00:00.000Z", 12]]
    assert json.loads(pattern["example"]["body"]) == {"order": {"id": "o-0", "note": "café"}}


def test_a_pattern_of_rows_without_ids_or_reasons_still_renders() -> None:
    # Rows Spark made of lines that were no dead letters carry nulls where text was expected.
    p = _pattern(
        sample_message_ids=[None, "m-2"], reasons=[None], source_queues=[None], signature=None
    )
    html = render([p], 3)
    assert "<summary>m-2</summary>" in html
    assert label(_pattern(template="", reasons=[None])) == "(no error text: unknown reason)"


def test_a_structured_error_keeps_its_class_in_the_label() -> None:
    # Given a pattern whose dead letters gave their exception class as a field
    pattern = {"template": "card <NUM> declined", "signature": "PaymentDeclined", "reasons": []}
    # I expect the class before the text, and a traceback's signature left out
    assert label(pattern) == "PaymentDeclined: card <NUM> declined"
    assert label({**pattern, "signature": "ValueError @ a:b"}) == "card <NUM> declined"
    assert label({**pattern, "template": ""}) == "PaymentDeclined"


def test_an_impure_pattern_is_flagged_in_the_report() -> None:
    pattern = {
        "id": "p-1",
        "template": "could not <*> the block",
        "signature": "",
        "count": 25,
        "source_queues": ["q"],
        "reasons": ["rejected"],
        "first_seen": None,
        "last_seen": None,
        "hourly_counts": [],
        "sample_message_ids": [],
        "example": None,
        "key_paths_missing": [],
        "overrepresented_attributes": [],
        "purity": 0.8,
        "impure": True,
        "variables": [
            {
                "variable": 1,
                "token": "<*>",
                "values": ["read", "write"],
                "counts": [20, 5],
                "distinct": 2,
                "warning": "2 values that each recur: maybe 2 different failures",
            }
        ],
    }
    pattern["variables"].append(  # type: ignore[attr-defined]
        {"variable": 2, "token": "<NUM>", "values": ["<NUM>"], "distinct": 1, "example": "8192"}
    )
    page = render([pattern], 25)
    assert "(e.g. <code>8192</code>)" in page
    assert "impure: purity 0.80" in page
    assert "<code>read</code> &times;20" in page
    assert "maybe 2 different failures" in page
    assert "impure" not in render([{**pattern, "impure": False, "variables": []}], 25)


# The pattern's fields that carry text of whoever sent or rejected the dead letters.
_TEXT_FIELDS = {
    "template": lambda t: {"template": f"KeyError {t}"},
    "signature": lambda t: {"signature": f"Err{t}"},
    "reason": lambda t: {"template": "", "reasons": [f"rejected{t}"]},
    "source queue": lambda t: {"source_queues": [f"orders{t}"]},
    "example body": lambda t: {"example": {"message_id": "m-1", "body": f"x{t}y"}},
    "missing key path": lambda t: {"key_paths_missing": [f"order.{t}"]},
    "sample id": lambda t: {"sample_message_ids": [f"m{t}"]},
}


@settings(max_examples=60, deadline=None)
@given(
    field=st.sampled_from(sorted(_TEXT_FIELDS)),
    hidden=st.sampled_from(NOT_SHOWN).map(chr),
)
def test_no_character_that_hides_or_reorders_text_reaches_the_page(field: str, hidden: str) -> None:
    # Given a pattern whose text holds a control or a mark that turns a line around (U+202E)
    html = render([_pattern(**_TEXT_FIELDS[field](hidden))], 3)
    # I expect the page to show it as its escape, as the command line does (in the example,
    # JSON's own escape of a control will do), and never raw
    assert hidden not in html, field
    escapes = {f"\\u{ord(hidden):04x}"}
    if field == "example body":
        escapes.add(json.dumps(hidden)[1:-1])
    assert any(e in html for e in escapes), field
