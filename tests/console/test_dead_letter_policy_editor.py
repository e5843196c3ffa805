"""The queue page changes where dead letters go by reason and each consumer tag's own max
claims and DLQ; a route the server refuses is said as the server says it and stores nothing."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api
from tests.console.test_pages import DLQ, orders_with_dlq


def test_routes_and_a_tags_policy_are_changed_from_the_queue_page(api: Api, page: Any) -> None:
    # Given orders dead-lettering to orders-dlq at its third delivery, a tag billing that takes
    # the queue's policy, and a queue `payments` that has a DLQ of its own
    page.set_viewport_size({"width": 1280, "height": 900})
    orders_with_dlq(api, max_claims=3)
    for name in ("orders-rejects", "billing-dlq", "payments-dlq"):
        api.queue(name)
    api.queue("payments", _max_claim_count=2, _dead_letter_queue="payments-dlq")
    api.request("PUT", "/v2/queues/orders/tags/billing", json={})
    page.goto("/console/#/queues/orders")
    routes = page.locator("#settings-routes")
    expect(routes).to_contain_text("none")

    # When rejected dead letters are routed to orders-rejects on the page
    page.select_option("#route-reason", "rejected")
    page.fill("#route-dlq", "orders-rejects")
    page.click("#route-add")
    # I expect the route in words and in the queue's metadata
    expect(routes).to_have_text("rejected → orders-rejects")
    meta = api.request("GET", "/v2/queues/orders").json()
    assert meta["_dead_letter_routes"] == {"rejected": "orders-rejects"}

    # A route to a queue with its own DLQ (a chain) is refused: the page says the server's
    # words, and nothing is stored
    page.select_option("#route-reason", "expired")
    page.fill("#route-dlq", "payments")
    page.click("#route-add")
    expect(page.locator("#queue-settings .error")).to_contain_text("chain")
    expect(routes).to_have_text("rejected → orders-rejects")
    meta = api.request("GET", "/v2/queues/orders").json()
    assert meta["_dead_letter_routes"] == {"rejected": "orders-rejects"}

    # A second route is added beside the first
    page.select_option("#route-reason", "maxlen")
    page.fill("#route-dlq", "orders-rejects")
    page.click("#route-add")
    expect(routes).to_have_text("maxlen → orders-rejects, rejected → orders-rejects")
    meta = api.request("GET", "/v2/queues/orders").json()
    assert meta["_dead_letter_routes"] == {"maxlen": "orders-rejects", "rejected": "orders-rejects"}

    # When billing is given its own max claims and DLQ
    edit = page.locator("#settings-tags tr[data-tag-edit='billing']")
    billing = page.locator("#settings-tags tr[data-tag='billing'] td")
    expect(billing).to_have_text(f"{DLQ} after 3 deliveries")
    # (the editors fit the window: nothing to scroll sideways)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    edit.locator(".tag-max-claims").fill("2")
    edit.locator(".tag-dlq").fill("billing-dlq")
    edit.locator(".tag-save").click()
    # I expect them marked as its own, and stored on the tag
    expect(billing).to_have_text("billing-dlq (own) after 2 (own) deliveries")
    tag = api.request("GET", "/v2/queues/orders/tags/billing").json()
    assert (tag["max_claims"], tag["dead_letter_queue"]) == (2, "billing-dlq")

    # A tag's DLQ that has a DLQ of its own is refused as a route is, the tag kept as it was
    edit.locator(".tag-dlq").fill("payments")
    edit.locator(".tag-save").click()
    expect(page.locator("#queue-settings .error")).to_contain_text("chain")
    tag = api.request("GET", "/v2/queues/orders/tags/billing").json()
    assert (tag["max_claims"], tag["dead_letter_queue"]) == (2, "billing-dlq")

    # "inherit" gives its max claims back to the queue (null), its DLQ staying its own
    edit.locator(".tag-inherit-max-claims").click()
    expect(billing).to_have_text("billing-dlq (own) after 3 deliveries")
    tag = api.request("GET", "/v2/queues/orders/tags/billing").json()
    assert (tag["max_claims"], tag["dead_letter_queue"]) == (None, "billing-dlq")

    # A retry backoff of its own is set, and refused with one bound left empty (nothing read
    # as 0), then given back to the queue
    edit.locator(".tag-retry-min").fill("5")
    edit.locator(".tag-retry-max").fill("60")
    edit.locator(".tag-save").click()
    expect(billing).to_contain_text("retry 5 s, doubling after each delivery up to 60 s (own)")
    tag = api.request("GET", "/v2/queues/orders/tags/billing").json()
    assert tag["retry_policy"] == {"minimum_backoff": 5, "maximum_backoff": 60}
    edit = page.locator("#settings-tags tr[data-tag-edit='billing']")
    edit.locator(".tag-retry-max").fill("")
    edit.locator(".tag-save").click()
    expect(page.locator("#queue-settings .error")).to_contain_text("maximum_backoff")
    tag = api.request("GET", "/v2/queues/orders/tags/billing").json()
    assert tag["retry_policy"] == {"minimum_backoff": 5, "maximum_backoff": 60}
    edit.locator(".tag-inherit-retry-policy").click()
    expect(billing).not_to_contain_text("retry")
    assert api.request("GET", "/v2/queues/orders/tags/billing").json()["retry_policy"] is None

    # And a route is removed with its button, the other kept; then the last one
    page.locator("#routes-list li[data-reason='rejected'] .route-remove").click()
    expect(routes).to_have_text("maxlen → orders-rejects")
    meta = api.request("GET", "/v2/queues/orders").json()
    assert meta["_dead_letter_routes"] == {"maxlen": "orders-rejects"}
    page.locator("#routes-list li[data-reason='maxlen'] .route-remove").click()
    expect(routes).to_contain_text("none")
    assert not api.request("GET", "/v2/queues/orders").json().get("_dead_letter_routes")
