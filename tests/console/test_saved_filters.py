"""The DLQ page's filter bar keeps filters by name and takes several attribute predicates, in
a real browser: the fields saved as a filter of the DLQ, listed to apply, and deleted."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api
from tests.console.test_dead_letter_filters import WIDTH, apply, failures
from tests.console.test_pages import DLQ, shown_ids


def test_two_attribute_predicates_must_both_hold(api: Api, page: Any) -> None:
    ids = failures(api)
    page.set_viewport_size(WIDTH)
    page.goto(f"/console/#/dlq/{DLQ}")
    rows = page.locator("#dead-letters tr[data-id]")
    expect(rows).to_have_count(5)
    # One predicate selects the acme dead letter; a second one that it fails selects none
    apply(page, attribute="tenant")
    expect(rows).to_have_count(1)
    assert shown_ids(page) == set(ids["key"][:1])
    page.click("#filter-attribute-add")
    page.fill("#filter-attribute-2", "tenant=other")
    page.click("#filter-apply")
    expect(rows).to_have_count(0)
    expect(page.locator("#filter-preview")).to_have_text("selects 0 dead letters")
    # both are kept in the page's address, and read back from it into two fields
    assert page.evaluate("location.hash").count("attribute=") == 2
    page.reload()
    expect(page.locator("#filter-attribute-2")).to_have_value("tenant=other")
    expect(rows).to_have_count(0)
    page.fill("#filter-attribute-2", "tenant=acme")
    page.click("#filter-apply")
    expect(rows).to_have_count(1)
    # Clear leaves one empty field
    page.click("#filter-clear")
    expect(rows).to_have_count(5)
    expect(page.locator(".filter-attribute-more")).to_have_count(0)


def test_the_fields_are_saved_as_a_filter_listed_applied_and_deleted(api: Api, page: Any) -> None:
    ids = failures(api)
    page.set_viewport_size(WIDTH)
    page.goto(f"/console/#/dlq/{DLQ}")
    rows = page.locator("#dead-letters tr[data-id]")
    expect(rows).to_have_count(5)
    # Save as… with nothing filled says so and saves nothing
    page.click("#filter-save-as")
    expect(page.locator("#saved-note")).to_contain_text("Fill some fields first")
    # When the key errors of orders are saved as "keys"
    apply(page, error_class="KeyError", source="orders")
    expect(rows).to_have_count(2)
    page.once("dialog", lambda d: d.accept("keys"))
    page.click("#filter-save-as")
    # the DLQ keeps them under that name, and the bar applies it by its name
    expect(page.locator("#filter-saved")).to_have_value("keys")
    expect(rows).to_have_count(2)
    assert "filter=keys" in page.evaluate("location.hash")
    (saved,) = api.request("GET", f"/v2/queues/{DLQ}/dead_letters/filters").json()["filters"]
    assert saved["name"] == "keys"
    assert saved["filter"] == {"source_queue": "orders", "error_class": "KeyError"}
    # A name the server refuses says why
    page.select_option("#filter-saved", "")
    apply(page, error_class="ValueError")
    page.once("dialog", lambda d: d.accept("no spaces"))
    page.click("#filter-save-as")
    expect(page.locator("#saved-note")).to_contain_text("is not a filter name")
    # Listed, a saved filter applies when chosen
    page.goto(f"/console/#/dlq/{DLQ}")
    expect(rows).to_have_count(5)
    page.select_option("#filter-saved", "keys")
    expect(rows).to_have_count(2)
    assert shown_ids(page) == set(ids["key"])
    # and is deleted after a confirmation; the DLQ's dead letters stay
    page.click("#filter-saved-delete")
    expect(page.locator("#confirm-text")).to_contain_text(f"Delete the saved filter keys of {DLQ}")
    page.click("#confirm-ok")
    expect(rows).to_have_count(5)
    expect(page.locator("#filter-saved option")).to_have_count(1)
    assert api.request("GET", f"/v2/queues/{DLQ}/dead_letters/filters").json()["filters"] == []
