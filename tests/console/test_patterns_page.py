"""The failure patterns page: facts in words, ids on one line, and a redrive of everything
only after a confirmation."""

from __future__ import annotations

import re
import time
from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api, screenshot
from tests.console.test_pages import DLQ, dead_letter_mix


def analysed(api: Api, ids: dict[str, list[str]]) -> None:
    """Patterns as `deadletter analyze --queue` stores them (docs/pipeline.md's fields)."""
    common = {
        "reasons": ["rejected"],
        "first_seen": "2026-11-22T15:04:05.000Z",
        "last_seen": "2026-11-22T16:09:05.000Z",
        "hourly_counts": [["2026-11-22T15:00:00.000Z", 1], ["2026-11-22T16:00:00.000Z", 1]],
        "key_paths_in_all": ["n", "q"],
    }
    patterns = [
        {
            "id": "p-fcd39ef3032a",
            "template": "timeout after <*> ms",
            # A long signature and many paths squeeze the id's column, as real analyses do
            "signature": "TimeoutError at " + " < ".join(f"worker.py:{n}" for n in range(40)),
            "key_paths_in_all": [f"order.lines[{n}].sku" for n in range(30)],
            "count": 2,
            "message_ids": ids["timeout"],
            "source_queues": ["orders"],
            "sample_message_ids": ids["timeout"],
            "key_paths_missing": ["customer.id"],
            "overrepresented_attributes": [
                {"name": "producer_version", "value": "2.4.0", "share": 1.0, "lift": 6.9}
            ],
            "example": {"message_id": ids["timeout"][0], "body": {"q": "orders", "n": 1}},
            **{k: v for k, v in common.items() if k != "key_paths_in_all"},
        },
        {
            "id": "p-0a7e5d21b9c4",
            "template": "negative total <*>",
            "signature": "ValueError",
            "count": 2,
            "message_ids": ids["negative"],
            "source_queues": ["payments"],
            "sample_message_ids": ids["negative"],
            "key_paths_missing": [],
            "overrepresented_attributes": [],
            "example": {"message_id": ids["negative"][0], "body": {"q": "payments", "n": 1}},
            **common,
        },
    ]
    api.request("PUT", f"/v2/queues/{DLQ}/patterns", json={"patterns": patterns})


def test_patterns_read_as_words_with_ids_on_one_line_and_the_right_command(
    api: Api, page: Any
) -> None:
    analysed(api, dead_letter_mix(api))
    page.goto(f"/console/#/dlq/{DLQ}/patterns")
    rows = page.locator("#patterns tr[data-pattern]")
    expect(rows).to_have_count(2)
    # The "more" column says what analyze found, in words, not as JSON
    more = page.locator("#patterns tr[data-pattern='p-fcd39ef3032a'] td.facts")
    expect(more).to_contain_text("from: orders")
    expect(more).to_contain_text("lacks: customer.id")
    expect(more).to_contain_text("producer_version=2.4.0 (100%, lift 6.9)")
    expect(more).to_contain_text("per hour: 2 hours, at most 1 in one")
    for text in page.locator("#patterns td.facts").all_inner_texts():
        assert not any(mark in text for mark in ('{"', '["', '":')), text
    # Each pattern id stays on one line
    for pattern_id in page.locator("#patterns td.pattern-id code").all():
        assert pattern_id.evaluate("e => e.getClientRects().length") == 1
    # The note names the command that stores patterns, as code, with no Markdown left in it
    note = page.locator("#patterns-note")
    expect(note.locator("code")).to_have_text(
        [f"deadletter analyze --queue {DLQ}", f"deadletter analyze --queue {DLQ} --follow"]
    )
    assert "`" not in page.locator("main").inner_text()
    assert "--url" not in page.locator("main").inner_text()
    # The page follows the feed: a store of patterns redraws it
    expect(page.locator("#live")).to_have_text("live")
    screenshot(page, "patterns")


def test_redriving_everything_asks_first_cancel_moves_nothing_confirm_moves_all(
    api: Api, page: Any
) -> None:
    ids = dead_letter_mix(api)
    analysed(api, ids)
    page.goto(f"/console/#/dlq/{DLQ}/patterns")
    expect(page.locator("#patterns tr[data-pattern]")).to_have_count(2)
    # When the operator starts a redrive with no filter at all
    page.click("#redrive-button")
    page.click("#redrive-start")
    # I expect a confirmation that says it is everything, and Cancel to move nothing
    expect(page.locator("#confirm")).to_be_visible()
    expect(page.locator("#confirm-text")).to_contain_text(f"all 5 dead letters in {DLQ}")
    page.click("#confirm button[value='cancel']")
    expect(page.locator("#confirm")).to_be_hidden()
    expect(page.locator("#redrive-progress")).to_be_hidden()
    assert api.request("GET", f"/v2/queues/{DLQ}/redrives").json()["redrives"] == []
    assert len(api.dead_letters(DLQ)) == 5
    # and Confirm to move every one
    page.click("#redrive-start")
    page.click("#confirm-ok")
    expect(page.locator("#redrive-progress")).to_have_attribute("data-status", "COMPLETED")
    expect(page.locator("#redrive-status")).to_contain_text("5 of 5 moved")
    assert api.dead_letters(DLQ) == []


def test_an_alerted_pattern_has_its_line_above_the_table(api: Api, page: Any) -> None:
    # Given patterns stored at a rate of 1 a minute, then again with one at 40 and a new one
    analysed(api, dead_letter_mix(api))
    stored = api.request("GET", f"/v2/queues/{DLQ}/patterns").json()["patterns"]
    path = f"/v2/queues/{DLQ}/patterns"
    api.request("PUT", path, json={"patterns": [{**p, "rate_per_minute": 1.0} for p in stored]})
    faster = [
        {**p, "rate_per_minute": 40.0 if p["id"] == "p-fcd39ef3032a" else 1.0} for p in stored
    ]
    newer = {"id": "p-000000000new", "template": "unknown currency <*>", "count": 1}
    api.request("PUT", path, json={"patterns": [*faster, newer]})
    # When the page opens
    page.goto(f"/console/#/dlq/{DLQ}/patterns")
    # Then each alert has its line, in words, and the rate has its column
    expect(page.locator("#pattern-alerts li")).to_have_count(3)
    line = page.locator("#pattern-alerts li[data-pattern='p-000000000new']")
    expect(line).to_contain_text("new pattern")
    expect(line).to_contain_text("unknown currency <*>")
    jumped = page.locator("#pattern-alerts li[data-pattern='p-fcd39ef3032a']")
    expect(jumped).to_contain_text("rate jumped")
    rate = page.locator("#patterns tr[data-pattern='p-fcd39ef3032a'] td.rate")
    expect(rate).to_have_text("40/min")


def test_the_patterns_follow_each_store_with_their_counts_rates_and_trend(
    api: Api, page: Any
) -> None:
    # Given one pattern stored by the live job: 3 dead letters, per minute over three minutes
    path = f"/v2/queues/{DLQ}/patterns"
    ids = dead_letter_mix(api)
    first = {
        "id": "p-fcd39ef3032a",
        "template": "timeout after <*> ms",
        "count": 2,
        "message_ids": ids["timeout"],
        "first_seen": "2026-11-22T15:04:05.000Z",
        "last_seen": "2026-11-22T15:06:30.000Z",
        "rate_per_minute": 0.4,
        "minute_counts": [["2026-11-22T15:04:00.000Z", 1], ["2026-11-22T15:06:00.000Z", 1]],
    }
    api.request("PUT", path, json={"patterns": [first]})
    page.goto(f"/console/#/dlq/{DLQ}/patterns")
    row = page.locator("#patterns tr[data-pattern='p-fcd39ef3032a']")
    expect(row.locator("td.count")).to_have_text("2")
    expect(row.locator("td.rate")).to_have_text("0.4/min")
    # The trend is one bar per minute, the empty minute between drawn as nothing
    bars = row.locator("td.trend svg.sparkline rect")
    expect(bars).to_have_count(3)
    assert [b.get_attribute("data-count") for b in bars.all()] == ["1", "0", "1"]
    expect(row.locator("td.trend svg")).to_have_attribute("data-unit", "minute")
    expect(page.locator("#live")).to_have_text("live")
    # When the live job stores the pattern grown and a new one beside it
    grown = {
        **first,
        "count": 4,
        "last_seen": "2026-11-22T15:07:10.000Z",
        "rate_per_minute": 0.8,
        "minute_counts": [*first["minute_counts"], ["2026-11-22T15:07:00.000Z", 2]],
    }
    newer = {
        "id": "p-000000000new",
        "template": "unknown currency <*>",
        "count": 1,
        "message_ids": ids["negative"][:1],
        "hourly_counts": [["2026-11-22T15:00:00.000Z", 1]],
    }
    api.request("PUT", path, json={"patterns": [grown, newer]})
    # Then the page shows both without a reload: counts, rate, last seen, the trend's new bar
    expect(page.locator("#patterns tr[data-pattern]")).to_have_count(2)
    expect(row.locator("td.count")).to_have_text("4")
    expect(row.locator("td.rate")).to_have_text("0.8/min")
    expect(bars).to_have_count(4)
    assert [b.get_attribute("data-count") for b in bars.all()] == ["1", "0", "1", "2"]
    expect(page.locator("#pattern-alerts li[data-pattern='p-000000000new']")).to_contain_text(
        "new pattern"
    )
    assert row.locator("td.first-seen").inner_text() != "—"
    assert row.locator("td.last-seen").inner_text() != row.locator("td.first-seen").inner_text()
    # A pattern the batch analysis stored (per hour) has its trend per hour
    hourly = page.locator("#patterns tr[data-pattern='p-000000000new'] td.trend svg")
    expect(hourly).to_have_attribute("data-unit", "hour")
    screenshot(page, "patterns-live")


def redrive_all(api: Api) -> None:
    """What `deadletter redrive start DLQ --wait` does: every dead letter back, to the end."""
    task = api.request("POST", f"/v2/queues/{DLQ}/redrives", json={}).json()
    deadline = time.monotonic() + 30
    while task["status"] != "COMPLETED":
        assert time.monotonic() < deadline, task
        time.sleep(0.1)
        task = api.request("GET", f"/v2/queues/{DLQ}/redrives/{task['id']}").json()


def test_a_pattern_whose_dead_letters_are_gone_is_listed_last_with_nothing_to_redrive(
    api: Api, page: Any
) -> None:
    # Given two stored patterns, each with its dead letters in the DLQ
    analysed(api, dead_letter_mix(api))
    page.goto(f"/console/#/dlq/{DLQ}/patterns")
    rows = page.locator("#patterns tr[data-pattern]")
    timeouts = page.locator("#patterns tr[data-pattern='p-fcd39ef3032a']")
    negatives = page.locator("#patterns tr[data-pattern='p-0a7e5d21b9c4']")
    expect(rows.locator("button", has_text="redrive these")).to_have_count(2)
    expect(page.locator("#resolved-note")).to_be_hidden()
    # When the operator redrives the timeouts' pattern from the page
    timeouts.locator("button", has_text="redrive these").click()
    page.click("#redrive-start")
    expect(page.locator("#redrive-percent")).to_have_text("100%")
    # I expect that pattern to say nothing is left, with no browse or redrive, listed last
    expect(timeouts).to_have_class(re.compile(r"\bresolved\b"))
    expect(timeouts).to_contain_text("no dead letters left")
    expect(timeouts.locator("button")).to_have_count(0)
    expect(timeouts.locator("a", has_text="browse")).to_have_count(0)
    assert rows.evaluate_all("rs => rs.map((r) => r.dataset.pattern)") == [
        "p-0a7e5d21b9c4",
        "p-fcd39ef3032a",
    ]
    expect(page.locator("#resolved-note")).to_contain_text("1 of 2 patterns have no dead letters")
    # the other still offered, and the panel offering only it
    expect(negatives.locator("button", has_text="redrive these")).to_have_count(1)
    options = page.locator("#redrive-pattern option")
    expect(options).to_have_count(2)
    assert options.evaluate_all("os => os.map((o) => o.value)") == ["", "p-0a7e5d21b9c4"]
    # When everything else is redriven elsewhere (the CLI), the page follows without a reload
    redrive_all(api)
    expect(page.locator("#patterns tr.resolved")).to_have_count(2)
    expect(rows.locator("button")).to_have_count(0)
    # and a page opened after the DLQ was emptied offers no pattern either
    page.reload()
    expect(rows).to_have_count(2)
    expect(page.locator("#patterns tr.resolved")).to_have_count(2)
    expect(page.locator("#resolved-note")).to_contain_text("2 of 2 patterns have no dead letters")
    expect(rows.locator("button")).to_have_count(0)
    expect(page.locator("#redrive-pattern option")).to_have_count(1)
    screenshot(page, "patterns-resolved")
