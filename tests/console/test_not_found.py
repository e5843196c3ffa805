"""A link to a queue that does not exist: the page says so, offers the way back and the
nearest name, and no script error is left behind."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api, screenshot
from tests.console.test_pages import DLQ, orders_with_dlq

MISSING_ID = "0190f3c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f"


def script_errors(page: Any) -> list[str]:
    """What the page logs as an error, beyond the browser's own line for each 404 answer
    (the answer that tells the page the queue is missing)."""
    errors: list[str] = []

    def seen(msg: Any) -> None:
        if msg.type == "error" and not msg.text.startswith("Failed to load resource"):
            errors.append(msg.text)

    page.on("console", seen)
    return errors


def test_a_missing_queue_says_so_on_every_page_with_the_way_back(api: Api, page: Any) -> None:
    # Given a project with orders and its DLQ
    orders_with_dlq(api)
    errors = script_errors(page)
    for route, name in [
        ("#/queues/nosuch", "nosuch"),
        ("#/dlq/nosuch-dlq", "nosuch-dlq"),
        ("#/dlq/nosuch-dlq/patterns", "nosuch-dlq"),
        (f"#/dlq/nosuch-dlq/messages/{MISSING_ID}", "nosuch-dlq"),
    ]:
        # When a link names a queue that does not exist
        page.goto("about:blank")
        page.goto(f"/console/{route}")
        # I expect the page to say which queue is missing, and to lead back to the list
        box = page.locator("#not-found")
        expect(box).to_be_visible()
        expect(box.locator("h1")).to_have_text(f"Queue {name} not found")
        expect(box.locator("a[href='#/']")).to_have_count(1)
        # with no suggestion when no name is near, and a badge that does not wait for a feed
        expect(box.locator("#did-you-mean")).to_have_count(0)
        expect(page.locator("#live")).to_have_text("not live")
    # and nothing thrown or logged by the page's script (the fixture checks page errors)
    assert errors == []


def test_a_mistyped_queue_name_offers_the_nearest_one_on_the_same_page(api: Api, page: Any) -> None:
    orders_with_dlq(api)
    errors = script_errors(page)
    # When the DLQ's patterns are asked for under a near name
    page.goto("/console/#/dlq/order-dlq/patterns")
    # I expect the nearest queue offered, on the page that was asked for
    near = page.locator("#did-you-mean a")
    expect(near).to_have_text(DLQ)
    expect(near).to_have_attribute("href", f"#/dlq/{DLQ}/patterns")
    screenshot(page, "not-found")
    near.click()
    expect(page.locator("h1")).to_have_text(f"Failure patterns in {DLQ}")
    expect(page.locator("#not-found")).to_have_count(0)
    # and a queue's picture under a near name leads to that queue's picture
    page.goto("/console/#/queues/ordrs")
    expect(page.locator("#did-you-mean a")).to_have_attribute("href", "#/queues/orders")
    assert errors == []
