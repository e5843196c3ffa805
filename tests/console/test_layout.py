"""The console laid out for a laptop (1280 px) and a narrow window (800 px): actions where the
eye starts, ids on one line, tables that fit or scroll in their own box, columns sized for what
they hold, a consumers panel as tall as its claims."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.console.conftest import Api, screenshot
from tests.console.test_pages import DLQ
from tests.console.test_patterns_page import analysed

WIDTHS = [1280, 800]
HEIGHT = 900
TIMEOUT = "timeout after 30 ms while calling the inventory service"

# Elements reaching past the window's right edge that no box of theirs scrolls or clips: what
# a reader cannot reach without scrolling the whole page sideways.
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (!r.width || r.right <= width + 1) continue;
    let box = el.parentElement;
    while (box && getComputedStyle(box).overflowX === "visible") box = box.parentElement;
    if (!box || box === document.body || box === document.documentElement) {
      out.push(`${el.tagName.toLowerCase()}#${el.id}.${el.className} right=${Math.round(r.right)}`);
    }
  }
  return out;
}"""


def full_dlq(api: Api, n: int = 55) -> dict[str, list[str]]:
    """More dead letters than a page shows: orders' timeouts and payments' negative totals."""
    api.queue(DLQ)
    api.queue("orders", _max_claim_count=1, _dead_letter_queue=DLQ)
    api.queue("payments", _max_claim_count=1, _dead_letter_queue=DLQ)
    ids: dict[str, list[str]] = {"timeout": [], "negative": []}
    for start in range(0, n, 20):
        queue = "orders" if start % 40 == 0 else "payments"
        bodies = ({"q": queue, "n": start + k} for k in range(min(20, n - start)))
        sent = api.send(queue, *bodies)
        claim_id, _ = api.claim(queue, limit=20)
        assert claim_id is not None
        error = TIMEOUT if queue == "orders" else "negative total -3"
        for message_id in sent:
            api.reject(queue, message_id, claim_id, error)
        ids["timeout" if queue == "orders" else "negative"] += sent
    return ids


def open_at(page: Any, width: int, route: str) -> None:
    page.set_viewport_size({"width": width, "height": HEIGHT})
    page.goto("about:blank")
    page.goto(f"/console/{route}")


def box(locator: Any) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None, locator
    return dict(found)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_dlq_page_offers_redrive_at_the_top_beside_purge(
    api: Api, page: Any, width: int
) -> None:
    # Given a DLQ with more dead letters than a page lists
    full_dlq(api)
    # When its page opens
    open_at(page, width, f"#/dlq/{DLQ}")
    rows = page.locator("#dead-letters tr[data-id]")
    expect(rows).to_have_count(50)
    # I expect Redrive… on the first screen, on the line of Delete and Purge, above the rows
    redrive, purge, first = (
        box(page.locator("#redrive-button")),
        box(page.locator("#purge")),
        box(rows.first),
    )
    assert redrive["y"] + redrive["height"] <= HEIGHT
    assert abs(redrive["y"] - purge["y"]) < 4, (redrive, purge)
    assert redrive["y"] + redrive["height"] <= first["y"]
    # with its form folded away until asked for, then opened above the rows
    expect(page.locator("#redrive-card")).to_be_hidden()
    page.click("#redrive-button")
    expect(page.locator("#redrive-form")).to_be_visible()
    assert box(page.locator("#redrive-start"))["y"] < box(rows.first)["y"]
    page.click("#redrive-button")
    expect(page.locator("#redrive-card")).to_be_hidden()
    if width == 800:
        screenshot(page, "dead-letters-narrow")


ONE_LINE = "els => els.map((e) => e.getClientRects().length)"
COPIED = """(el) => {
  getSelection().selectAllChildren(el);
  const data = new DataTransfer();
  const copy = { clipboardData: data, bubbles: true, cancelable: true };
  el.dispatchEvent(new ClipboardEvent("copy", copy));
  return data.getData("text/plain");
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_ids_sit_on_one_line_shortened_with_the_whole_id_at_hand(
    api: Api, page: Any, width: int
) -> None:
    # Given dead letters grouped under stored patterns
    ids = full_dlq(api)
    analysed(api, ids)
    # When the dead letters are listed
    open_at(page, width, f"#/dlq/{DLQ}")
    rows = page.locator("#dead-letters tr[data-id]")
    expect(rows).to_have_count(50)
    # I expect each id on one line, as `…` and its last six characters, whole in its tooltip
    shown = page.locator("#dead-letters td.id .id")
    assert set(shown.evaluate_all(ONE_LINE)) == {1}
    first = rows.first.get_attribute("data-id")
    assert first is not None
    expect(shown.first).to_have_text(f"…{first[-6:]}")
    expect(shown.first).to_have_attribute("title", first)
    # and copying the short id copies the whole one
    assert shown.first.evaluate(COPIED) == first
    # Pattern ids too, so every row is as tall as the others
    patterns = page.locator("#dead-letters td.pattern .id")
    assert set(patterns.evaluate_all(ONE_LINE)) == {1}
    expect(patterns.first).to_have_text("p-fcd39ef3032a")
    heights = rows.evaluate_all(
        "rows => rows.map((r) => Math.round(r.getBoundingClientRect().height))"
    )
    assert len(set(heights)) == 1, heights
    # On the patterns page, the pattern ids and the sample ids alike
    open_at(page, width, f"#/dlq/{DLQ}/patterns")
    expect(page.locator("#patterns tr[data-pattern]")).to_have_count(2)
    samples = page.locator("#patterns td.facts .id")
    assert samples.count() >= 6
    assert set(samples.evaluate_all(ONE_LINE)) == {1}
    assert set(page.locator("#patterns td.pattern-id .id").evaluate_all(ONE_LINE)) == {1}
    texts = samples.evaluate_all("els => els.map((e) => e.textContent)")
    assert all(t.startswith("…") and len(t) == 7 for t in texts), texts


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_fits_the_window_or_scrolls_its_tables_in_their_box(
    api: Api, page: Any, width: int
) -> None:
    ids = full_dlq(api)
    analysed(api, ids)
    api.send("orders", *({"n": n} for n in range(20)))
    assert api.claim("orders", limit=2)[0] is not None
    for route, ready in [
        ("#/", "#queues tr[data-queue]"),
        ("#/queues/orders", "#dlq-strip .cell"),
        (f"#/dlq/{DLQ}", "#dead-letters tr[data-id]"),
        (f"#/dlq/{DLQ}/patterns", "#patterns tr[data-pattern]"),
        (f"#/dlq/{DLQ}/messages/{ids['timeout'][0]}", "#message-body"),
    ]:
        open_at(page, width, route)
        expect(page.locator(ready).first).to_be_visible()
        # Nothing reaches past the window's edge unless its own box scrolls it
        assert page.evaluate(OVERFLOWING) == [], route
        assert page.evaluate("document.documentElement.scrollWidth") <= width, route
        # and each table's last column can be scrolled into view
        for last in page.locator("table.grid thead th:last-child").all():
            last.scroll_into_view_if_needed()
            expect(last).to_be_in_viewport()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_template_column_has_the_room_and_the_facts_keep_to_theirs(
    api: Api, page: Any, width: int
) -> None:
    analysed(api, full_dlq(api))
    open_at(page, width, f"#/dlq/{DLQ}/patterns")
    expect(page.locator("#patterns tr[data-pattern]")).to_have_count(2)
    template = box(page.locator("#patterns th.col-template"))
    more = box(page.locator("#patterns th.col-more"))
    # I expect the template wider than the facts beside it, and wide enough to read
    assert template["width"] > more["width"], (template, more)
    assert template["width"] >= 250
    # The row is not stretched by a long list of facts: 30 key paths are folded away
    row = box(page.locator("#patterns tr[data-pattern='p-fcd39ef3032a']"))
    assert row["height"] < 400, row
    facts = page.locator("#patterns tr[data-pattern='p-fcd39ef3032a'] td.facts")
    expect(facts).to_contain_text("all have: order.lines[0].sku")
    expect(facts).to_contain_text("+24 more")
    expect(facts.get_by_text("order.lines[29].sku")).to_be_hidden()
    # and a long signature keeps to three lines under its template
    signature = page.locator("#patterns tr[data-pattern='p-fcd39ef3032a'] .signature")
    line = float(signature.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
    assert box(signature)["height"] <= 3 * line + 2
    expect(signature).to_have_attribute(
        "title", "TimeoutError at " + " < ".join(f"worker.py:{n}" for n in range(40))
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_the_consumers_panel_is_as_tall_as_its_claims(api: Api, page: Any, width: int) -> None:
    # Given a queue of 60 messages, 2 of them claimed
    api.queue("orders")
    for start in range(0, 60, 20):
        api.send("orders", *({"n": n} for n in range(start, start + 20)))
    claim_id, _ = api.claim("orders", limit=2)
    assert claim_id is not None
    # When its picture opens
    open_at(page, width, "#/queues/orders")
    expect(page.locator("#main-strip .cell")).to_have_count(50)
    expect(page.locator("#consumers .consumer")).to_have_count(1)
    # I expect the panel no taller than its one claim needs
    panel = page.locator("#consumers")
    inner = panel.evaluate(
        "e => [...e.children].filter((c) => !c.hidden)"
        ".reduce((n, c) => n + c.getBoundingClientRect().height, 0)"
    )
    assert box(panel)["height"] <= inner + 24, (box(panel), inner)
    assert box(panel)["height"] < box(page.locator("#main-strip"))["height"] / 2
    # and the strip keeps the width: at least four cells a row
    tops = page.locator("#main-strip .cell").evaluate_all(
        "cells => cells.map((c) => Math.round(c.getBoundingClientRect().top))"
    )
    assert tops.count(tops[0]) >= 4, tops[:8]


@pytest.mark.parametrize("width", WIDTHS)
def test_a_queue_picture_offers_redrive_beside_its_dlq_and_unfolds_it_under_the_picture(
    api: Api, page: Any, width: int
) -> None:
    # Given orders with a dead letter in its DLQ
    full_dlq(api, n=3)
    open_at(page, width, "#/queues/orders")
    expect(page.locator("#dlq-strip .cell")).to_have_count(3)
    # I expect *redrive DLQ* on the DLQ's line, between the threshold and the DLQ's strip
    button = box(page.locator("#redrive-button"))
    assert box(page.locator("#threshold"))["y"] < button["y"] < box(page.locator("#dlq-strip"))["y"]
    expect(page.locator("#redrive-card")).to_be_hidden()
    # and, clicked, its form under the picture, this queue as the source
    page.click("#redrive-button")
    expect(page.locator("#redrive-source")).to_have_value("orders")
    form = box(page.locator("#redrive-form"))
    assert box(page.locator(".picture"))["y"] < form["y"] < box(page.locator("#cell-detail"))["y"]
