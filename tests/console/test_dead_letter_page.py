"""One dead letter's page: opened at its top, redriven on its own."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import VIEWPORT, Api, screenshot
from tests.console.test_pages import DLQ, dead_letter_mix

# The fields of the DLQ-wide redrive that say nothing about one message.
FILTERS = ["source", "reason", "since", "until", "pattern", "selected", "rate"]


def test_a_dead_letter_opens_at_its_header_and_redrives_alone_without_filters(
    api: Api, page: Any
) -> None:
    # Given a DLQ of five dead letters from two queues
    ids = dead_letter_mix(api)
    victim = ids["timeout"][0]
    # When one of them is opened on a laptop's screen
    page.goto(f"/console/#/dlq/{DLQ}/messages/{victim}")
    header = page.locator("h1")
    expect(header).to_have_text(f"Dead letter {victim}")
    expect(page.locator("#message-body")).to_contain_text('"q": "orders"')
    # I expect the page at its top: the header in view, the redrive form folded away
    assert page.evaluate("window.scrollY") == 0
    box = header.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]
    expect(page.locator("#redrive-form")).to_be_hidden()
    expect(page.locator("#redrive-button")).to_be_in_viewport()
    screenshot(page, "dead-letter")
    # and, opened, the form asks nothing that does not apply to one message
    page.click("#redrive-button")
    expect(page.locator("#redrive-form")).to_be_visible()
    for name in FILTERS:
        expect(page.locator(f"#redrive-{name}")).to_have_count(0)
    expect(page.locator("#redrive-destination")).to_be_visible()
    # When it is started, this message alone goes back to its source queue
    page.click("#redrive-start")
    expect(page.locator("#redrive-progress")).to_have_attribute("data-status", "COMPLETED")
    expect(page.locator("#redrive-status")).to_contain_text("1 of 1 moved")
    expect(page.locator("#redriven")).to_contain_text("Redriven to orders")
    left = {m["id"] for m in api.dead_letters(DLQ)}
    assert left == set(ids["timeout"][1:] + ids["negative"] + ids["max_claims"])
    back = api.request(
        "GET", "/v2/queues/orders/messages", params={"echo": "true", "include_claimed": "true"}
    ).json()["messages"]
    assert [m["history"][0]["dlq"] for m in back] == [DLQ]
    assert [m["body"] for m in back] == [{"q": "orders", "n": 1}]
