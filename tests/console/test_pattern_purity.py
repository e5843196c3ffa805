"""The patterns page says how sure each pattern is (its purity, an impure warning, each
variable position's values with their counts), splits a pattern at a position by hand, and
the redrive form warns over an impure pattern, whose canary needs force."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api, screenshot

DLQ = "orders-dlq"
WARNING = "2 values that each recur with their own structure: maybe 2 different failures"
FORMATS = (
    "cannot combine TimestampType and StringType",
    "cannot combine DateType and StringType",
    "cannot combine TimestampType and LongType",
)


def rejected(api: Api, errors: tuple[str, ...]) -> list[str]:
    """One dead letter in DLQ per error, each rejected from "orders" with it; their ids."""
    api.queue(DLQ)
    api.queue("orders", _max_claim_count=5, _dead_letter_queue=DLQ)
    ids = api.send("orders", *range(len(errors)))
    claim_id, _ = api.claim("orders", limit=len(errors))
    assert claim_id is not None
    for message_id, error in zip(ids, errors, strict=True):
        api.reject("orders", message_id, claim_id, error)
    return ids


def mixed(api: Api) -> list[str]:
    """Three dead letters whose errors name two formats, stored as one pattern the analysis
    flagged impure at its first position, beside a pure one."""
    ids = rejected(api, FORMATS)
    impure = {
        "id": "p-mixed",
        "template": "cannot combine <*> and <*>",
        "count": 3,
        "message_ids": ids,
        "purity": 0.67,
        "impure": True,
        "variables": [
            {"variable": 1, "token": "<*>", "values": ["TimestampType", "DateType"],
             "counts": [2, 1], "distinct": 2,
             "warning": WARNING},
            {"variable": 2, "token": "<*>", "values": ["StringType", "LongType"],
             "counts": [2, 1], "distinct": 2},
        ],
    }  # fmt: skip
    pure = {
        "id": "p-pure",
        "template": "timeout after <NUM> ms",
        "count": 0,
        "purity": 1.0,
        "impure": False,
        "variables": [
            {"variable": 1, "token": "<NUM>", "values": ["<NUM>"], "counts": [4], "distinct": 1}
        ],
    }
    api.request("PUT", f"/v2/queues/{DLQ}/patterns", json={"patterns": [impure, pure]})
    return ids


def test_each_pattern_says_how_sure_it_is_and_splits_at_a_position(api: Api, page: Any) -> None:
    ids = mixed(api)
    page.goto(f"/console/#/dlq/{DLQ}/patterns")
    row = page.locator("#patterns tr[data-pattern='p-mixed']")
    # The impure pattern: its score, a warning naming the position, its positions unfolded
    expect(row.locator(".purity")).to_have_text("purity 0.67")
    expect(row.locator(".impure-warning")).to_contain_text("Impure")
    expect(row.locator(".impure-warning")).to_contain_text("(position #1)")
    variables = row.locator("details.variables")
    expect(variables).to_have_attribute("open", "")
    expect(variables.locator("> summary")).to_have_text("2 variable positions · 1 flagged")
    first = variables.locator(".variable[data-variable='1']")
    expect(first).to_contain_text("#1 <*>: TimestampType (2), DateType (1) · 2 values")
    expect(first.locator(".variable-warning")).to_contain_text("maybe 2 different failures")
    # The pure one: its score, no warning, its one-valued position folded and not splittable
    pure = page.locator("#patterns tr[data-pattern='p-pure']")
    expect(pure.locator(".purity")).to_have_text("purity 1.00")
    expect(pure.locator(".impure-warning")).to_have_count(0)
    expect(pure.locator("details.variables")).not_to_have_attribute("open", "")
    expect(pure.locator("button.split-here")).to_have_count(0)
    # And no JSON of the variables is left in the "more" column
    assert "variables" not in row.locator("td.facts").inner_text()
    # Every value of a position, with its count, read from the dead letters on demand
    first.locator("details.all-values summary").click()
    expect(first.locator(".every-value")).to_have_text("TimestampType (2), DateType (1)")
    screenshot(page, "pattern-purity")
    # When the operator splits at the first position, asked first with what it would make
    first.locator("button.split-here").click()
    expect(page.locator("#confirm-text")).to_contain_text(
        "Split pattern p-mixed at position 1 into 2 patterns, one per value: TimestampType (2),"
        " DateType (1)?"
    )
    page.click("#confirm-ok")
    # Then the page shows one pattern per format in its place
    expect(page.locator("#split-note")).to_contain_text("Split p-mixed at position 1 into")
    expect(page.locator("#patterns tr[data-pattern='p-mixed']")).to_have_count(0)
    templates = page.locator("#patterns td.template code").all_inner_texts()
    assert sorted(templates) == [
        "cannot combine DateType and <*>",
        "cannot combine TimestampType and <*>",
        "timeout after <NUM> ms",
    ]
    parts = page.locator("#patterns td.facts .split-from")
    expect(parts).to_have_count(2)
    stamps = page.locator("#patterns tr", has_text="cannot combine TimestampType and <*>")
    expect(stamps.locator(".split-from")).to_have_text("split from: p-mixed at #1 (TimestampType)")
    stored = api.request("GET", f"/v2/queues/{DLQ}/patterns").json()["patterns"]
    assert sorted(len(p.get("message_ids") or []) for p in stored) == [0, 1, 2]
    assert sorted(m for p in stored for m in p.get("message_ids") or []) == sorted(ids)


def test_the_redrive_form_warns_over_an_impure_pattern_and_forces_its_canary(
    api: Api, page: Any
) -> None:
    mixed(api)
    page.goto(f"/console/#/dlq/{DLQ}/patterns")
    row = page.locator("#patterns tr[data-pattern='p-mixed']")
    # When the operator opens the redrive form on the impure pattern
    row.locator("button", has_text="redrive these").click()
    warning = page.locator("#redrive-impure")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("Pattern p-mixed is flagged impure (purity 0.67)")
    # A pure pattern, or none, takes the warning away
    page.select_option("#redrive-pattern", "p-pure")
    expect(warning).to_be_hidden()
    page.select_option("#redrive-pattern", "p-mixed")
    expect(warning).to_be_visible()
    # A canary without force is the server's refusal, shown
    page.fill("#redrive-canary", "1")
    page.click("#redrive-start")
    expect(page.locator("#redrive-card .problems")).to_contain_text("Pattern impure")
    assert api.request("GET", f"/v2/queues/{DLQ}/redrives").json()["redrives"] == []
    # With force, the task starts
    page.check("#redrive-force")
    page.click("#redrive-start")
    expect(page.locator("#redrive-progress")).to_be_visible()
    (task,) = api.request("GET", f"/v2/queues/{DLQ}/redrives").json()["redrives"]
    assert task["filter"]["pattern_id"] == "p-mixed" and task["canary"]["requested"] == 1


def test_a_value_that_would_reorder_itself_is_shown_escaped_in_the_list_and_the_question(
    api: Api, page: Any
) -> None:
    # Given a pattern whose first position holds a value with a mark that turns a line around
    # (U+202E), as a consumer's error may hold it
    errors = (
        "cannot combine Evil\u202eType and StringType",
        "cannot combine DateType and StringType",
    )
    ids = rejected(api, errors)
    pattern = {
        "id": "p-evil", "template": "cannot combine <*> and <*>", "count": 2,
        "message_ids": ids, "purity": 0.5, "impure": True,
        "variables": [
            {"variable": 1, "token": "<*>", "values": ["Evil\u202eType", "DateType"],
             "counts": [1, 1], "distinct": 2, "warning": WARNING},
        ],
    }  # fmt: skip
    api.request("PUT", f"/v2/queues/{DLQ}/patterns", json={"patterns": [pattern]})
    # When its every value is read from the dead letters, and a split is asked for
    page.goto(f"/console/#/dlq/{DLQ}/patterns")
    first = page.locator("#patterns tr[data-pattern='p-evil'] .variable[data-variable='1']")
    first.locator("details.all-values summary").click()
    # I expect the mark shown as its escape, in the list and in the question, never raw
    expect(first.locator(".every-value")).to_contain_text("Evil\\u202eType (1)")
    first.locator("button.split-here").click()
    expect(page.locator("#confirm-text")).to_contain_text("Evil\\u202eType")
    assert "\u202e" not in page.locator("#confirm-text").inner_text()
    assert "\u202e" not in first.inner_text()
