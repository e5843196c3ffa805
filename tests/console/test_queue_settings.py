"""The queue page's retry policy and Solace redelivery count: said in words, changed in place,
and a change the server refuses said as the server says it."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api
from tests.console.test_pages import cell, orders_with_dlq


def test_the_retry_policy_and_max_redelivery_are_shown_and_edited(api: Api, page: Any) -> None:
    # Given a queue dead-lettering at its third delivery, without a retry policy
    orders_with_dlq(api, max_claims=3)
    page.goto("/console/#/queues/orders")
    retry, redelivery = page.locator("#settings-retry"), page.locator("#settings-redelivery")
    expect(retry).to_contain_text("none")
    expect(redelivery).to_have_text("2 (3 deliveries before the DLQ)")
    # When a retry policy is set on the page
    page.fill("#retry-min", "5")
    page.fill("#retry-max", "60")
    page.click("#retry-save")
    # I expect it in words on the page and in the queue's metadata
    expect(retry).to_have_text("5 s, doubling after each delivery up to 60 s")
    meta = api.request("GET", "/v2/queues/orders").json()
    assert meta["_retry_policy"] == {"minimum_backoff": 5, "maximum_backoff": 60}
    # A minimum above the maximum is the server's to refuse, and the page says why
    page.fill("#retry-min", "61")
    page.click("#retry-save")
    expect(page.locator("#queue-settings .error")).to_contain_text("minimum backoff")
    expect(retry).to_have_text("5 s, doubling after each delivery up to 60 s")
    # Solace's redelivery count changed to 4 is 5 deliveries, and the threshold follows
    page.fill("#redelivery", "4")
    page.click("#redelivery-save")
    expect(redelivery).to_have_text("4 (5 deliveries before the DLQ)")
    expect(page.locator("#threshold-count")).to_have_text("maxClaimCount = 5")
    assert api.request("GET", "/v2/queues/orders").json()["_max_claim_count"] == 5
    # And the policy is removed with one button
    page.click("#retry-remove")
    expect(retry).to_contain_text("none")
    assert api.request("GET", "/v2/queues/orders").json().get("_retry_policy") is None


def test_a_message_serving_its_backoff_says_until_when(api: Api, page: Any) -> None:
    # Given a message given back to a queue that backs off a minute
    api.queue("orders", _retry_policy={"minimum_backoff": 60, "maximum_backoff": 60})
    (mid,) = api.send("orders", {"order": 1})
    claim_id, _ = api.claim("orders")
    assert claim_id is not None
    api.release("orders", claim_id)
    # When its cell is read, the card says when it is visible again
    page.goto("/console/#/queues/orders")
    cell(page, "main-strip", mid).hover()
    expect(page.locator("#cell-detail-id")).to_have_text(mid)
    expect(page.locator("#cell-detail")).to_contain_text("hidden until")
