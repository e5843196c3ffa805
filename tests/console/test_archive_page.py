"""Failure groups in the console: the browser's filters archived after a confirmation that
says how many, the archive page restoring them, a pattern's group discarded with a why that
the discard log shows."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api, screenshot
from tests.console.test_pages import DLQ, dead_letter_mix, shown_ids
from tests.console.test_patterns_page import analysed


def confirm(page: Any, words: str) -> None:
    dialog = page.locator("#confirm")
    expect(dialog).to_be_visible()
    expect(page.locator("#confirm-text")).to_contain_text(words)
    dialog.locator("button[value=ok]").click()


def test_a_filtered_group_is_archived_then_restored(api: Api, page: Any) -> None:
    ids = dead_letter_mix(api)
    page.goto(f"/console/#/dlq/{DLQ}")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(5)
    # Without a filter the console asks for one
    page.click("#archive-group")
    expect(page.locator("#group-note")).to_contain_text("Choose a filter")
    # Given the payments filter, the archive asks first with the server's count
    page.select_option("#filter-source", "payments")
    page.click("#filter-apply")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(2)
    page.fill("#archive-days", "2")
    page.click("#archive-group")
    confirm(page, "Archive 2 dead letters")
    expect(page.locator("#group-note")).to_contain_text("Archived 2 dead letters")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(0)
    assert len(api.dead_letters(DLQ)) == 3
    # The archive page lists them, kept until a date, and restores the one selected
    page.click("#archive-link")
    expect(page.locator("#archived tr[data-id]")).to_have_count(2)
    screenshot(page, "archive")
    first = ids["negative"][0]
    page.locator(f"#archived tr[data-id='{first}'] input[type=checkbox]").check()
    page.click("#restore-selected")
    confirm(page, "Restore 1 dead letter")
    expect(page.locator("#archived tr[data-id]")).to_have_count(1)
    assert first in {m["id"] for m in api.dead_letters(DLQ)}
    page.click("#restore-all")
    confirm(page, "Restore 1 dead letter")
    expect(page.locator("#archived tr[data-id]")).to_have_count(0)
    page.goto(f"/console/#/dlq/{DLQ}")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(5)
    assert shown_ids(page) == {i for group in ids.values() for i in group}


def test_a_patterns_group_is_discarded_with_a_why_in_the_log(api: Api, page: Any) -> None:
    analysed(api, dead_letter_mix(api))
    page.goto(f"/console/#/dlq/{DLQ}/patterns")
    row = page.locator("#patterns tr[data-pattern='p-0a7e5d21b9c4']")
    row.locator("button.discard-pattern").click()
    expect(page.locator("#group-note")).to_contain_text("Say why first")
    page.fill("#discard-why", "payments fixed the totals by hand")
    row.locator("button.discard-pattern").click()
    confirm(page, "Discard 2 dead letters")
    expect(page.locator("#group-note")).to_contain_text("Discarded 2 dead letters")
    assert len(api.dead_letters(DLQ)) == 3
    page.goto(f"/console/#/dlq/{DLQ}/archive")
    logged = page.locator("#discards tr[data-discard]")
    expect(logged).to_have_count(1)
    expect(logged).to_contain_text("payments fixed the totals by hand")
    expect(logged).to_contain_text("pattern_id=p-0a7e5d21b9c4")
