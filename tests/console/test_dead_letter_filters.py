"""The DLQ page's filter bar and a dead letter's edit and retry, in a real browser at 1280 px:
the filter language's fields select on the server, the bar counts what they select before
anything moves, and the redrive and the purge take that selection, their confirmation saying
how many; an edit is kept in the history with who and when, the original beside it."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api, screenshot
from tests.console.test_pages import DLQ, shown_ids

WIDTH = {"width": 1280, "height": 900}


def reject(api: Api, queue: str, body: Any, error: Any, **attributes: str) -> str:
    """Send `body` to `queue` with `attributes`, claim it and reject it with `error`."""
    typed = {k: {"type": "String", "value": v} for k, v in attributes.items()}
    message = {"body": body, **({"attributes": typed} if typed else {})}
    r = api.request("POST", f"/v2/queues/{queue}/messages", json={"messages": [message]})
    (mid,) = [href.rsplit("/", 1)[1] for href in r.json()["resources"]]
    claim_id, held = api.claim(queue)
    assert claim_id is not None and [m["id"] for m in held] == [mid]
    api.request("POST", f"/v2/queues/{queue}/messages/{mid}/dead_letter",
                params={"claim_id": claim_id}, json={"error": error})  # fmt: skip
    return mid


def failures(api: Api) -> dict[str, list[str]]:
    """Given orders and payments whose DLQ holds two KeyErrors of orders (one of tenant acme,
    without a customer id), two ValueErrors of payments and a timeout of orders."""
    api.queue(DLQ)
    for queue in ("orders", "payments"):
        api.queue(queue, _max_claim_count=3, _dead_letter_queue=DLQ)
    key = {"class": "KeyError", "message": "'id'"}
    value = {"class": "ValueError", "message": "total=-3"}
    return {
        "key": [reject(api, "orders", {"customer": {"tenant": "acme"}}, key, tenant="acme"),
                reject(api, "orders", {"customer": {"id": 1}}, key)],
        "value": [reject(api, "payments", {"total": -3}, value),
                  reject(api, "payments", {"total": -4}, value)],
        "timeout": [reject(api, "orders", {"n": 5}, "timeout after 30 ms")],
    }  # fmt: skip


def apply(page: Any, **fields: str) -> None:
    """Fill the bar's fields (by id: error_class -> #filter-error-class) and apply them."""
    for name, value in fields.items():
        selector = f"#filter-{name.replace('_', '-')}"
        if page.locator(selector).evaluate("e => e.tagName") == "SELECT":
            page.select_option(selector, value)
        else:
            page.fill(selector, value)
    page.click("#filter-apply")


def test_the_filter_bar_selects_on_the_server_and_counts_before_anything_moves(
    api: Api, page: Any
) -> None:
    ids = failures(api)
    page.set_viewport_size(WIDTH)
    page.goto(f"/console/#/dlq/{DLQ}")
    rows = page.locator("#dead-letters tr[data-id]")
    expect(rows).to_have_count(5)
    expect(page.locator("#filter-preview")).to_have_text("selects 5 dead letters")
    # By error class: the list, the preview and the page's address follow the filter
    apply(page, error_class="KeyError")
    expect(rows).to_have_count(2)
    assert shown_ids(page) == set(ids["key"])
    expect(page.locator("#filter-preview")).to_have_text("selects 2 dead letters")
    assert "error_class=KeyError" in page.evaluate("location.hash")
    screenshot(page, "dead-letters-filtered")
    # A field being filled counts what it would select before it is applied
    page.fill("#filter-attribute", "tenant=acme")
    expect(page.locator("#filter-preview")).to_have_text("selects 1 dead letter")
    expect(rows).to_have_count(2)
    # and a bad value says why in the preview's place
    page.fill("#filter-older-than", "soon")
    expect(page.locator("#filter-preview")).to_contain_text("older_than must be a duration")
    page.fill("#filter-older-than", "")
    # By a body predicate and a regular expression, by source, by death count
    for fields, want in [
        ({"attribute": "", "error_class": "", "body": "customer && !(customer.id)"},
         ids["key"][:1]),
        ({"body": "", "error_matches": "total=-[0-9]+"}, ids["value"]),
        ({"error_matches": "", "source": "orders", "text": "timeout after"}, ids["timeout"]),
        ({"source": "", "text": "", "min_deaths": "2"}, []),
    ]:  # fmt: skip
        apply(page, **fields)
        expect(rows).to_have_count(len(want))
        assert shown_ids(page) == set(want), fields
    # Clear lists every dead letter again
    page.click("#filter-clear")
    expect(rows).to_have_count(5)


def test_a_filtered_redrive_and_purge_take_the_selection_and_say_how_many(
    api: Api, page: Any
) -> None:
    ids = failures(api)
    page.set_viewport_size(WIDTH)
    page.goto(f"/console/#/dlq/{DLQ}?error_class=KeyError")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(2)
    # The redrive's form moves what the bar selects, and shows no filters of its own
    page.click("#redrive-button")
    expect(page.locator("#redrive-filter")).to_contain_text("error_class=KeyError")
    expect(page.locator("#redrive-source")).to_have_count(0)
    page.click("#redrive-start")
    # its confirmation counts what it would move, and cancelled moves nothing
    expect(page.locator("#confirm-text")).to_have_text(
        f"Redrive the 2 dead letters of {DLQ} that the filter selects to their source queues?"
    )
    page.click("#confirm button[value='cancel']")
    assert api.request("GET", f"/v2/queues/{DLQ}/redrives").json()["redrives"] == []
    # and, with a transform, edits each one as it moves
    page.fill("#redrive-transform", '{"body": {"fixed": true}}')
    page.click("#redrive-start")
    page.click("#confirm-ok")
    expect(page.locator("#redrive-progress")).to_have_attribute("data-status", "COMPLETED")
    expect(page.locator("#redrive-status")).to_contain_text("2 of 2 moved")
    expect(page.locator("#filter-preview")).to_have_text("selects 0 dead letters")
    left = {m["id"] for m in api.dead_letters(DLQ)}
    assert left == set(ids["value"] + ids["timeout"])
    everything = {"echo": "true", "include_claimed": "true"}
    back = api.request("GET", "/v2/queues/orders/messages", params=everything).json()["messages"]
    fixed = [
        {"customer": {"tenant": "acme"}, "fixed": True},
        {"customer": {"id": 1}, "fixed": True},
    ]
    assert sorted(map(str, (m["body"] for m in back))) == sorted(map(str, fixed))
    assert all(m["history"][-2]["event"] == "edited" for m in back), back[0]["history"]
    # The purge of a selection deletes what the filter selects, after saying how many
    page.goto(f"/console/#/dlq/{DLQ}?source_queue=payments")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(2)
    expect(page.locator("#purge")).to_have_text("Purge selection…")
    page.click("#purge")
    expect(page.locator("#confirm-text")).to_contain_text(
        f"Delete the 2 dead letters of {DLQ} that the filter selects (source_queue=payments)"
    )
    page.click("#confirm-ok")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(0)
    expect(page.locator("#filter-preview")).to_have_text("selects 0 dead letters")
    assert {m["id"] for m in api.dead_letters(DLQ)} == set(ids["timeout"])


def test_edit_and_retry_keeps_each_edit_in_the_history_and_redrives(api: Api, page: Any) -> None:
    ids = failures(api)
    victim = ids["key"][0]
    page.set_viewport_size(WIDTH)
    page.goto(f"/console/#/dlq/{DLQ}/messages/{victim}")
    expect(page.locator("#edit-form")).to_be_hidden()
    page.click("#edit-button")
    body = page.locator("#edit-body")
    assert '"tenant": "acme"' in body.input_value()
    # An unchanged body, or one that is not JSON, is refused on the page
    page.click("#edit-apply")
    expect(page.locator("#edit-form .error")).to_contain_text("The body is unchanged")
    body.fill("{not json")
    page.click("#edit-apply")
    expect(page.locator("#edit-form .error")).to_contain_text("Not JSON")
    # When the body gets a customer id, the edit is a merge patch of what changed
    body.fill('{"customer": {"id": "c-0"}, "total": 3}')
    page.click("#edit-apply")
    expect(page.locator("#edit-outcome")).to_contain_text("merge patch")
    expect(page.locator("#message-body")).to_contain_text('"id": "c-0"')
    history = page.locator("#history .edit-event")
    expect(history).to_have_count(1)
    expect(history).to_contain_text(re.compile(r"edited · by project "))
    page.click("#history .edit-event details.original summary")
    expect(page.locator("#history .original-body")).to_contain_text('"tenant": "acme"')
    page.locator("#edit-card").evaluate("e => e.scrollIntoView()")
    screenshot(page, "dead-letter-edit")
    (stored,) = [m for m in api.dead_letters(DLQ) if m["id"] == victim]
    assert stored["body"] == {"customer": {"id": "c-0"}, "total": 3}
    edit = stored["history"][-1]
    assert edit["patch"] == {"type": "merge", "document": {
        "body": {"customer": {"tenant": None, "id": "c-0"}, "total": 3}}}  # fmt: skip
    assert edit["original"]["body"] == {"customer": {"tenant": "acme"}}
    # A null in the new body is no removal: that edit is a JSON Patch replacing the body
    body.fill('{"customer": {"id": "c-0"}, "total": 3, "note": null}')
    page.click("#edit-apply")
    expect(page.locator("#edit-outcome")).to_contain_text("JSON Patch")
    expect(history).to_have_count(2)
    # Edit and retry: applied, then sent back to its source queue at once
    body.fill('{"customer": {"id": "c-0"}, "total": 4}')
    page.check("#edit-redrive")
    expect(page.locator("#edit-apply")).to_have_text("Apply and redrive")
    page.click("#edit-apply")
    expect(page.locator("#edit-outcome")).to_contain_text("Edited and sent back to orders")
    expect(page.locator("#edit-form")).to_be_hidden()

    # The redrive is a task of one message, run by the server's worker: wait for it
    def back() -> list[Any]:
        return [m["body"] for m in api.request("GET", "/v2/queues/orders/messages",
                params={"echo": "true", "include_claimed": "true"}).json()["messages"]]  # fmt: skip

    for _ in range(50):
        if back():
            break
        page.wait_for_timeout(100)
    assert back() == [{"customer": {"id": "c-0"}, "total": 4}]
    assert victim not in {m["id"] for m in api.dead_letters(DLQ)}
