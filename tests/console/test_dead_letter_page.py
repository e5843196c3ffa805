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


def test_a_dead_letter_shows_its_error_fields_and_its_deaths(api: Api, page: Any) -> None:
    # Given a dead letter rejected with the exception's class, message and a stack that is
    # markup, not to be run,
    api.queue(DLQ)
    api.queue("orders", _max_claim_count=3, _dead_letter_queue=DLQ)
    (mid,) = api.send("orders", {"q": "orders"})
    claim_id, _ = api.claim("orders")
    stack = '<img src=x onerror="window.ran=1">\n  File "app.py"'
    r = api.request(
        "POST",
        f"/v2/queues/orders/messages/{mid}/dead_letter",
        params={"claim_id": claim_id},
        json={"error": {"class": "KeyError", "message": "'id'", "stack": stack}},
    )
    assert r.status_code == 200, r.text
    # When its page is opened, its class, stack and one death are shown as text
    page.goto(f"/console/#/dlq/{DLQ}/messages/{mid}")
    expect(page.locator("#error-class")).to_have_text("KeyError")
    expect(page.locator("#error-stack")).to_have_text(stack)
    expect(page.locator("#deaths li")).to_have_count(1)
    expect(page.locator("#deaths li")).to_contain_text("orders · rejected · 1\u00d7")
    assert page.evaluate("window.ran") is None
    # and the list names the class before the message.
    page.goto(f"/console/#/dlq/{DLQ}")
    expect(page.locator("#dead-letters td.error-text")).to_contain_text("KeyError: 'id'")


def test_text_that_would_hide_or_reorder_itself_is_shown_escaped(api: Api, page: Any) -> None:
    # Given a dead letter whose body and error hold a mark that turns a line around (U+202E)
    # and a terminal's escape sequence, as a sender and a consumer may write them
    api.queue(DLQ)
    api.queue("orders", _max_claim_count=3, _dead_letter_queue=DLQ)
    (mid,) = api.send("orders", "pay \u202egnp.exe\x1b[2J")
    claim_id, _ = api.claim("orders")
    r = api.request(
        "POST",
        f"/v2/queues/orders/messages/{mid}/dead_letter",
        params={"claim_id": claim_id},
        json={"error": {"class": "KeyError", "message": "id\u2066\u202e", "stack": "\x85x"}},
    )
    assert r.status_code == 200, r.text
    # When its page and its DLQ's list are opened
    page.goto(f"/console/#/dlq/{DLQ}/messages/{mid}")
    # I expect each such character shown as its escape, as the command line shows it
    expect(page.locator("#message-body")).to_have_text("pay \\u202egnp.exe\\u001b[2J")
    expect(page.locator("#error-stack")).to_have_text("\\u0085x")
    page.goto(f"/console/#/dlq/{DLQ}")
    cell = page.locator("#dead-letters td.error-text")
    expect(cell).to_contain_text("KeyError: id\\u2066\\u202e")
    assert "\u202e" not in (cell.get_attribute("title") or "")
