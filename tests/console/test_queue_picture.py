"""The queue picture read by a person: cells that differ, a legend, and who holds what."""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api, screenshot
from tests.console.test_pages import DLQ, cell, dead_letter_mix, orders_with_dlq

# The same start for every body, as real producers write them: only `order` (and once the
# customer) tells them apart. The last body would run script if it were inserted as HTML.
HOSTILE = "<img src=x onerror=document.body.dataset.owned=1>"
BODIES = [{"type": "order.created", "customer": "acme", "order": 1000 + n} for n in range(5)] + [
    {"type": "order.created", "customer": HOSTILE, "order": 1005}
]


def test_each_cell_shows_what_tells_its_message_apart_and_the_whole_body_on_focus(
    api: Api, page: Any
) -> None:
    # Given messages whose bodies start alike
    orders_with_dlq(api)
    ids = api.send("orders", *BODIES)
    # When the queue's picture opens
    page.goto("/console/#/queues/orders")
    cells = page.locator("#main-strip .cell")
    expect(cells).to_have_count(len(BODIES))
    # I expect each label to start with what differs (the first characters are what shows)
    labels = page.locator("#main-strip .cell .cell-label").all_inner_texts()
    assert [label.split()[0] for label in labels] == [f"order={b['order']}" for b in BODIES]
    # and each cell to end with the tail of its id
    tails = page.locator("#main-strip .cell .cell-id").all_inner_texts()
    assert tails == [f"…{i[-6:]}" for i in ids]
    # Focusing a cell (keyboard) shows its whole body, pointing at one does too
    cell(page, "main-strip", ids[1]).focus()
    expect(page.locator("#cell-detail-id")).to_have_text(ids[1])
    assert json.loads(page.locator("#cell-detail-body").inner_text()) == BODIES[1]
    cell(page, "main-strip", ids[-1]).hover()
    expect(page.locator("#cell-detail-id")).to_have_text(ids[-1])
    assert json.loads(page.locator("#cell-detail-body").inner_text()) == BODIES[-1]
    # The hostile body is text everywhere it is shown, never markup
    expect(page.locator("#cell-detail-body")).to_contain_text(HOSTILE)
    expect(page.locator("main img")).to_have_count(0)
    assert page.evaluate("document.body.dataset.owned") is None
    # A live redraw keeps the keyboard on the cell being read
    cell(page, "main-strip", ids[2]).focus()
    api.send("orders", {"type": "order.created", "customer": "acme", "order": 2000})
    expect(cells).to_have_count(len(BODIES) + 1)
    assert page.evaluate("document.activeElement.dataset.id") == ids[2]


COLOURS = """(els) => els.map((e) => {
  const s = getComputedStyle(e);
  return [s.backgroundColor, s.borderTopColor].join(" / ");
})"""


def test_every_colour_of_the_picture_is_explained_by_the_legend(api: Api, page: Any) -> None:
    # Given free messages, one claimed at its limit (red badge) and one dead letter
    orders_with_dlq(api, max_claims=2)
    first, _second, *_ = api.send("orders", *({"order": n} for n in range(4)))
    claim_id, _ = api.claim("orders")
    assert claim_id is not None
    api.release("orders", claim_id)
    held_id, held = api.claim("orders")
    assert held_id is not None and held[0]["id"] == first
    reject_id, rejected = api.claim("orders")
    assert reject_id is not None
    api.reject("orders", rejected[0]["id"], reject_id, "ValueError: total=-3")
    # When the picture shows them
    page.goto("/console/#/queues/orders")
    expect(page.locator("#dlq-strip .cell")).to_have_count(1)
    expect(cell(page, "main-strip", first).locator(".badge")).to_have_text("2")
    # I expect every cell colour and every badge colour drawn to be one the legend explains
    drawn = set(
        page.locator("#main-strip .cell, #dlq-strip .cell, #consumers .held").evaluate_all(COLOURS)
    )
    badges = set(page.locator(".strip .cell .badge").evaluate_all(COLOURS))
    explained = set(page.locator("#legend .swatch.cell").evaluate_all(COLOURS))
    explained_badges = set(page.locator("#legend .swatch.badge").evaluate_all(COLOURS))
    assert len(drawn) == 3 and len(badges) == 2  # free, claimed, dead; plain and at the limit
    assert drawn <= explained, drawn - explained
    assert badges <= explained_badges, badges - explained_badges
    # and each swatch has words beside it
    for item in page.locator("#legend li").all():
        assert item.inner_text().strip()


def test_the_consumers_show_each_claim_and_the_messages_it_holds_live(api: Api, page: Any) -> None:
    # Given a queue with a dead letter already and five messages waiting
    orders_with_dlq(api, max_claims=3)
    (poison,) = api.send("orders", {"type": "order.created", "order": 999, "sku": "X-0"})
    claim_id, _ = api.claim("orders")
    assert claim_id is not None
    api.reject("orders", poison, claim_id, "KeyError: 'customer'")
    api.send("orders", *({"type": "order.created", "order": 1000 + n} for n in range(5)))
    page.goto("/console/#/queues/orders")
    expect(page.locator("#consumers .consumer")).to_have_count(0)
    expect(page.locator("#consumer-count")).to_have_text("0 claims")
    # When two consumers claim two messages and one message
    first, held_first = api.claim("orders", limit=2)
    second, held_second = api.claim("orders", limit=1)
    assert first is not None and second is not None
    # I expect one consumer per claim, each with the messages it holds and its time left
    expect(page.locator("#consumers .consumer")).to_have_count(2)
    expect(page.locator("#consumer-count")).to_have_text("2 claims")
    for claim, held in ((first, held_first), (second, held_second)):
        consumer = page.locator(f"#consumers .consumer[data-claim='{claim}']")
        expect(consumer.locator(".held")).to_have_count(len(held))
        shown = consumer.locator(".held").evaluate_all("els => els.map((e) => e.dataset.id)")
        assert shown == [m["id"] for m in held]
        expect(consumer.locator(".claim-id")).to_have_text(f"claim …{claim[-6:]}")
        expect(consumer.locator(".left")).to_have_text(re.compile(r"^\d+s left$"))
        for m in held:
            expect(consumer.locator(f".held[data-id='{m['id']}']")).to_contain_text(
                f"order={m['body']['order']}"
            )
    cell(page, "main-strip", held_first[0]["id"]).hover()
    expect(page.locator("#cell-detail-id")).to_have_text(held_first[0]["id"])
    screenshot(page, "queue")
    # When the first consumer gives its messages back, it is gone from the picture
    api.release("orders", first)
    expect(page.locator("#consumers .consumer")).to_have_count(1)
    expect(page.locator(f"#consumers .consumer[data-claim='{second}']")).to_have_count(1)
    expect(page.locator("#dlq-strip .cell")).to_have_count(1)


def test_text_bodies_that_start_alike_are_labelled_by_what_follows(api: Api, page: Any) -> None:
    # Given text messages that share their first 25 characters
    api.queue("payments")
    texts = [f"payment failed for order {1001 + n}: card declined" for n in range(4)]
    api.send("payments", *texts)
    page.goto("/console/#/queues/payments")
    expect(page.locator("#main-strip .cell")).to_have_count(len(texts))
    # I expect the labels to start where they differ
    labels = page.locator("#main-strip .cell .cell-label").all_inner_texts()
    assert [label.split(":")[0] for label in labels] == [f"…{1001 + n}" for n in range(4)]


def test_a_bounded_queue_says_its_bounds_and_what_a_send_past_them_does(
    api: Api, page: Any
) -> None:
    api.queue("jobs", _max_messages=100, _max_bytes=4096, _overflow="reject-publish-dlx")
    api.queue("plain")
    page.goto("/console/#/queues/jobs")
    expect(page.locator("#bound")).to_contain_text(
        "at most 100 messages and 4096 bytes; past that sends are refused and dead-lettered"
        " (reject-publish-dlx)"
    )
    page.goto("/console/#/queues/plain")
    expect(page.locator("#main-strip")).to_be_visible()
    expect(page.locator("#bound")).to_have_count(0)


def test_the_picture_says_what_left_the_queue_and_why_live(api: Api, page: Any) -> None:
    # Given a queue with a DLQ whose picture is open, and nothing gone from it yet
    orders_with_dlq(api)
    api.send("orders", {"order": 1})
    page.goto("/console/#/queues/orders")
    expect(page.locator("#main-strip .cell")).to_have_count(1)
    expect(page.locator("#main-reasons")).to_have_text("")
    # When a consumer rejects the message
    claim_id, held = api.claim("orders")
    assert claim_id is not None
    api.reject("orders", held[0]["id"], claim_id, "ValueError: total=-3")
    # I expect the picture to say, without a reload, that it left for the DLQ and why
    expect(page.locator("#main-reasons")).to_have_text("· left: rejected 1")
    # and a queue with no DLQ to say what it dropped, in the overview's words
    api.queue("capped", _max_bytes=3)
    api.send("capped", "a", "b")  # JSON bodies of 3 bytes each: the first is dropped
    page.goto("/console/#/queues/capped")
    expect(page.locator("#main-reasons")).to_have_text("· left: dropped: maxlen 1")
    expect(page.locator("#main-reasons .dropped")).to_have_count(1)


def test_each_dead_letter_is_marked_with_its_pattern_which_it_links_to(api: Api, page: Any) -> None:
    # Given a DLQ with dead letters of two failures, and the picture open before any analysis
    ids = dead_letter_mix(api)
    page.goto("/console/#/queues/orders")
    dead = page.locator("#dlq-strip .cell")
    expect(dead).to_have_count(5)
    expect(page.locator("#dlq-strip .cell.patterned")).to_have_count(0)
    # When the analysis stores their patterns
    patterns = [
        {"id": "p-fcd39ef3032a", "template": "timeout after <*> ms", "message_ids": ids["timeout"]},
        {"id": "p-0a7e5d21b9c4", "template": "negative total <*>", "message_ids": ids["negative"]},
    ]
    api.request("PUT", f"/v2/queues/{DLQ}/patterns", json={"patterns": patterns})
    # Then each dead letter of a pattern is marked with it at once, the others are not
    expect(page.locator("#dlq-strip .cell.patterned")).to_have_count(4)
    for key, pattern_id in (("timeout", "p-fcd39ef3032a"), ("negative", "p-0a7e5d21b9c4")):
        for message_id in ids[key]:
            marked = cell(page, "dlq-strip", message_id)
            expect(marked).to_have_attribute("data-pattern", pattern_id)
            expect(marked.locator(".cell-pattern")).to_have_text(pattern_id[:7] + "…")
    expect(cell(page, "dlq-strip", ids["max_claims"][0]).locator(".cell-pattern")).to_have_count(0)
    # and the legend explains the mark
    expect(page.locator("#legend .swatch.patterned")).to_have_count(1)
    screenshot(page, "queue-patterns")
    # And the mark links to the pattern's row on the patterns page
    cell(page, "dlq-strip", ids["timeout"][0]).locator(".cell-pattern").click()
    expect(page.locator("#patterns tr.wanted")).to_have_attribute("data-pattern", "p-fcd39ef3032a")


def test_the_dead_letter_browser_names_each_dead_letters_pattern(api: Api, page: Any) -> None:
    ids = dead_letter_mix(api)
    page.goto(f"/console/#/dlq/{DLQ}")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(5)
    # When the patterns are stored, the list (following the feed) names each one's pattern
    patterns = [{"id": "p-fcd39ef3032a", "template": "timeout <*>", "message_ids": ids["timeout"]}]
    api.request("PUT", f"/v2/queues/{DLQ}/patterns", json={"patterns": patterns})
    for message_id in ids["timeout"]:
        link = page.locator(f"#dead-letters tr[data-id='{message_id}'] td.pattern a")
        expect(link).to_have_text("p-fcd39ef3032a")
    expect(
        page.locator(f"#dead-letters tr[data-id='{ids['negative'][0]}'] td.pattern a")
    ).to_have_count(0)
    page.locator(f"#dead-letters tr[data-id='{ids['timeout'][0]}'] td.pattern a").click()
    expect(page.locator("#patterns tr.wanted")).to_have_attribute("data-pattern", "p-fcd39ef3032a")
