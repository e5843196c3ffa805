"""The DLQ page's automatic redrive panel: set a policy, see its rounds run and its next
round, stop it, resume it, delete it (after a confirmation)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api, screenshot
from tests.console.test_pages import DLQ, dead_letter_mix


def test_a_policy_set_from_the_panel_runs_its_round_and_is_stopped_resumed_and_deleted(
    api: Api, page: Any
) -> None:
    # Given the DLQ page of a DLQ of five dead letters, two of them orders' rejected timeouts
    ids = dead_letter_mix(api)
    page.goto(f"/console/#/dlq/{DLQ}")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(5)
    state = page.locator("#auto-redrive-state")
    expect(state).to_have_text("none")
    expect(page.locator("#auto-redrive-stop")).to_be_hidden()
    # When the operator sets one for orders' rejected, every 10 minutes, at most 3 rounds
    page.click("#auto-redrive-edit")
    page.fill("#auto-redrive-source", "orders")
    page.select_option("#auto-redrive-reason", "rejected")
    page.fill("#auto-redrive-every", "10")
    page.fill("#auto-redrive-rounds", "3")
    page.fill("#auto-redrive-canary", "1")
    page.click("#auto-redrive-save")
    # Then the panel shows it active, with its next round; the server's worker runs the first
    expect(state).to_have_text("active")
    summary = page.locator("#auto-redrive-summary")
    expect(summary).to_contain_text("source_queue orders · reason rejected every 10 min")
    expect(summary).to_contain_text("at most 3 times, canary 1 watched 60 s")
    expect(page.locator("#auto-redrive-next")).to_contain_text("Next round")
    last = page.locator("#auto-redrive-last")
    expect(last).to_contain_text("2 to send back, 0 kept")
    expect(last).to_contain_text("task ")
    expect(summary).to_contain_text("1 round · 1 moved")  # the canary went first
    screenshot(page, "auto-redrive")
    left = {m["id"] for m in api.dead_letters(DLQ)}
    assert len(set(ids["timeout"]) & left) == 1
    # When it is stopped, there is no next round, and it may be resumed
    page.click("#auto-redrive-stop")
    expect(state).to_have_text("stopped")
    expect(page.locator("#auto-redrive-next")).to_have_text("No next round: stopped")
    expect(page.locator("#auto-redrive-why")).to_have_text("stopped by request")
    expect(page.locator("#auto-redrive-stop")).to_be_hidden()
    page.click("#auto-redrive-resume")
    expect(state).to_have_text("active")
    expect(page.locator("#auto-redrive-why")).to_be_hidden()
    # When it is deleted (confirmed), the panel says there is none
    page.click("#auto-redrive-delete")
    page.click("#confirm-ok")
    expect(state).to_have_text("none")
    response = api.http.get(f"/v2/queues/{DLQ}/dead_letters/auto_redrive")
    assert response.status_code == 404


def test_the_whole_dlq_is_set_only_after_a_confirmation(api: Api, page: Any) -> None:
    dead_letter_mix(api)
    page.goto(f"/console/#/dlq/{DLQ}")
    page.click("#auto-redrive-edit")
    page.click("#auto-redrive-save")
    page.click("#confirm button[value='cancel']")
    expect(page.locator("#auto-redrive-state")).to_have_text("none")
    page.click("#auto-redrive-save")
    page.click("#confirm-ok")
    expect(page.locator("#auto-redrive-state")).to_have_text("active")
    expect(page.locator("#auto-redrive-summary")).to_contain_text("Sends back the whole DLQ")
