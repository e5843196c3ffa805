"""The queue page says where dead letters go by reason and each consumer tag's own policy."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api
from tests.console.test_pages import DLQ


def test_routes_and_tag_policies_are_shown_on_the_queue_page(api: Api, page: Any) -> None:
    # Given orders, whose rejected dead letters go to orders-rejects, and two tags: billing
    # with a DLQ and a retry backoff of its own, shipping with the queue's policy
    for name in (DLQ, "orders-rejects", "billing-dlq"):
        api.queue(name)
    api.queue(
        "orders",
        _max_claim_count=3,
        _dead_letter_queue=DLQ,
        _dead_letter_routes={"rejected": "orders-rejects"},
    )
    api.request(
        "PUT",
        "/v2/queues/orders/tags/billing",
        json={
            "max_claims": 2,
            "dead_letter_queue": "billing-dlq",
            "retry_policy": {"minimum_backoff": 5, "maximum_backoff": 60},
        },
    )
    api.request("PUT", "/v2/queues/orders/tags/shipping", json={})
    # When the queue's page is open
    page.goto("/console/#/queues/orders")
    # I expect the route, and each tag's policy with what is its own marked
    expect(page.locator("#settings-routes")).to_have_text("rejected → orders-rejects")
    billing = page.locator("#settings-tags tr[data-tag='billing'] td")
    expect(billing).to_have_text(
        "billing-dlq (own) after 2 (own) deliveries;"
        " retry 5 s, doubling after each delivery up to 60 s (own)"
    )
    shipping = page.locator("#settings-tags tr[data-tag='shipping'] td")
    expect(shipping).to_have_text(f"{DLQ} after 3 deliveries")
