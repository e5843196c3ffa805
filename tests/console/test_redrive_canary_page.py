"""A canary redrive from the console: its sample, its verdict, and what the operator does
with a task its canary paused (resume it, or cancel it)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api, screenshot
from tests.console.test_pages import DLQ, dead_letter_mix


def start_canary(page: Any, size: str) -> None:
    """A redrive of the timeouts (the orders' rejected dead letters) with a canary."""
    page.goto(f"/console/#/dlq/{DLQ}")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(5)
    page.click("#redrive-button")
    page.fill("#redrive-source", "orders")
    page.select_option("#redrive-reason", "rejected")
    page.fill("#redrive-canary", size)
    page.fill("#redrive-watch", "600")
    page.fill("#redrive-max-redeath", "0")
    page.click("#redrive-start")


def fail_again(api: Api, page: Any) -> None:
    """The consumer of orders still fails the sample: it rejects it again."""
    outcome = page.locator("#redrive-canary-outcome")
    expect(outcome).to_contain_text("1 of 1 moved")
    claim_id, held = api.claim("orders")
    assert claim_id is not None and len(held) == 1
    api.reject("orders", held[0]["id"], claim_id, "timeout after 30 ms")


def test_a_canary_that_dies_again_pauses_the_task_and_resume_moves_the_rest(
    api: Api, page: Any
) -> None:
    # Given two timeouts of orders (and three other dead letters) in the DLQ
    ids = dead_letter_mix(api)
    # When the operator redrives the timeouts with a canary of one, watched ten minutes
    start_canary(page, "1")
    outcome = page.locator("#redrive-canary-outcome")
    expect(outcome).to_contain_text("Canary (1, watched 600 s, at most 0% may die again)")
    # and the canary dies again
    fail_again(api, page)
    # Then the task pauses with the reason, and nothing else moved
    progress = page.locator("#redrive-progress")
    expect(progress).to_have_attribute("data-status", "PAUSED")
    expect(page.locator("#redrive-status")).to_contain_text(
        "1 of 2 moved · PAUSED: 1 of 1 canaries died again"
    )
    expect(outcome).to_have_attribute("data-decision", "paused")
    expect(page.locator("#redrive-resume")).to_be_visible()
    expect(page.locator("#redrive-cancel")).to_be_visible()
    assert len(api.dead_letters(DLQ)) == 5
    screenshot(page, "redrive-paused")
    # And a page opened later shows the paused task too
    page.reload()
    expect(progress).to_have_attribute("data-status", "PAUSED")
    expect(outcome).to_contain_text("1 died again")
    # When the operator resumes it, the rest moves and the verdict stays on record
    page.click("#redrive-resume")
    expect(progress).to_have_attribute("data-status", "COMPLETED")
    expect(page.locator("#redrive-status")).to_contain_text("2 of 2 moved")
    expect(outcome).to_contain_text("resumed")
    expect(page.locator("#redrive-resume")).to_be_hidden()
    left = {m["id"] for m in api.dead_letters(DLQ)}
    assert set(ids["timeout"]) & left == set()
    assert len(left) == 4  # the others, and the canary that died again (a new dead letter)


def test_a_paused_task_cancelled_moves_nothing_more(api: Api, page: Any) -> None:
    dead_letter_mix(api)
    start_canary(page, "50%")
    fail_again(api, page)
    expect(page.locator("#redrive-progress")).to_have_attribute("data-status", "PAUSED")
    page.click("#redrive-cancel")
    expect(page.locator("#redrive-progress")).to_have_attribute("data-status", "CANCELLED")
    expect(page.locator("#redrive-resume")).to_be_hidden()
    (task,) = api.request("GET", f"/v2/queues/{DLQ}/redrives").json()["redrives"]
    assert (task["status"], task["moved"]) == ("CANCELLED", 1)


def test_a_canary_that_stays_fixed_lets_the_task_complete(api: Api, page: Any) -> None:
    dead_letter_mix(api)
    page.goto(f"/console/#/dlq/{DLQ}")
    page.click("#redrive-button")
    page.fill("#redrive-source", "payments")
    page.fill("#redrive-canary", "1")
    page.fill("#redrive-watch", "1")
    page.click("#redrive-start")
    expect(page.locator("#redrive-progress")).to_have_attribute("data-status", "COMPLETED")
    outcome = page.locator("#redrive-canary-outcome")
    expect(outcome).to_have_attribute("data-decision", "continued")
    expect(outcome).to_contain_text("0 died again")
