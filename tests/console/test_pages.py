"""The console in a real browser against a real server: what an operator sees and does."""

from __future__ import annotations

import re
import time
from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Api, screenshot

DLQ = "orders-dlq"


def orders_with_dlq(api: Api, max_claims: int = 2) -> None:
    api.queue(DLQ)
    api.queue("orders", _max_claim_count=max_claims, _dead_letter_queue=DLQ)


def cell(page: Any, strip: str, message_id: str) -> Any:
    return page.locator(f"#{strip} .cell[data-id='{message_id}']")


def test_the_overview_lists_every_queue_with_its_counts_and_marks_the_dlq(
    api: Api, page: Any
) -> None:
    # Given a queue with a policy, its DLQ and a plain queue
    orders_with_dlq(api)
    api.queue("audit")
    api.send("orders", {"order": 1}, {"order": 2})
    claim_id, held = api.claim("orders")
    assert claim_id is not None
    api.reject("orders", held[0]["id"], claim_id, "ValueError: total=-3")
    # When the overview opens
    page.goto("/console/")
    # I expect each queue with its depth, the policy and the reasons, and the DLQ marked
    rows = page.locator("#queues tr")
    expect(rows).to_have_count(3)
    orders = page.locator("#queues tr[data-queue='orders']")
    expect(orders.locator(".depth")).to_have_text("1")
    expect(orders.locator(".reasons")).to_have_text("rejected 1")
    expect(orders).to_contain_text(DLQ)
    expect(page.locator(f"#queues tr[data-queue='{DLQ}'] .tag.dlq")).to_have_count(1)
    expect(page.locator("#queues tr[data-queue='audit'] .tag.dlq")).to_have_count(0)
    screenshot(page, "overview")
    # And the filter keeps only matching names
    page.fill("#queue-filter", "aud")
    page.press("#queue-filter", "Enter")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-queue", "audit")


def test_the_overview_shows_what_a_full_dlq_kept_in_its_source(api: Api, page: Any) -> None:
    # Given a DLQ that holds one message and refuses more, and two messages spent at once
    api.queue(DLQ, _max_messages=1, _overflow="reject-publish")
    api.queue("orders", _max_claim_count=1, _dead_letter_queue=DLQ)
    api.send("orders", {"order": 1}, {"order": 2})
    claim_id, _ = api.claim("orders", limit=2)
    assert claim_id is not None
    # When both are given back at their limit: one fits the DLQ, the other stays in orders
    api.release("orders", claim_id)
    page.goto("/console/")
    # I expect the overview to say why orders still holds one
    orders = page.locator("#queues tr[data-queue='orders']")
    expect(orders.locator(".depth")).to_have_text("1")
    expect(orders.locator(".reasons")).to_have_text("max_claims 1 · kept, DLQ full: max_claims 1")
    expect(orders.locator(".reasons .dlq-full")).to_have_count(1)


def test_the_overview_shows_what_left_a_queue_for_no_dlq(api: Api, page: Any) -> None:
    # Given a queue without a DLQ whose bound drops its oldest message (drop-head), and one
    # whose message expired with nothing to dead-letter it to
    api.queue("capped", _max_bytes=3)
    api.send("capped", "a", "b")  # JSON bodies of 3 bytes each: the first is dropped
    api.queue("brief", _min_message_ttl=1)
    api.request("POST", "/v2/queues/brief/messages", json={"messages": [{"body": 1, "ttl": 1}]})
    deadline = time.monotonic() + 30
    while api.request("GET", "/v2/queues/brief/stats").json()["dead_letter"]["expired_dropped"] < 1:
        assert time.monotonic() < deadline, "the message never expired"
        time.sleep(0.2)
    # When the overview is opened
    page.goto("/console/")
    # I expect it to say what each queue lost, marked as such
    capped = page.locator("#queues tr[data-queue='capped']")
    expect(capped.locator(".reasons")).to_have_text("dropped: maxlen 1")
    expect(capped.locator(".reasons .dropped")).to_have_count(1)
    brief = page.locator("#queues tr[data-queue='brief']")
    expect(brief.locator(".reasons")).to_have_text("expired and dropped 1")


def test_a_message_failing_past_max_claims_climbs_its_badge_and_moves_to_the_dlq_live(
    api: Api, page: Any
) -> None:
    # Given three messages in a queue whose DLQ takes them after two deliveries
    orders_with_dlq(api, max_claims=2)
    first, second, third = api.send("orders", {"order": 1}, {"order": 2}, {"order": 3})
    page.goto("/console/#/queues/orders")
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#main-strip .cell")).to_have_count(3)
    expect(cell(page, "main-strip", first).locator(".badge")).to_have_text("0")
    # When a consumer claims the head and gives it back, the page follows each step
    claim_id, held = api.claim("orders")
    assert claim_id is not None and held[0]["id"] == first
    expect(cell(page, "main-strip", first)).to_have_class(re.compile(r"\bclaimed\b"))
    expect(cell(page, "main-strip", first).locator(".badge")).to_have_text("1")
    api.release("orders", claim_id)
    expect(cell(page, "main-strip", first)).not_to_have_class(re.compile(r"\bclaimed\b"))
    claim_id, held = api.claim("orders")
    assert claim_id is not None and held[0]["id"] == first
    expect(cell(page, "main-strip", first).locator(".badge")).to_have_text("2")
    # And gives it back at its limit: the message goes down to the DLQ at once (seed 004's
    # nack), the others stay
    api.release("orders", claim_id)
    expect(cell(page, "dlq-strip", first)).to_have_count(1)
    expect(cell(page, "main-strip", first)).to_have_count(0)
    expect(cell(page, "dlq-strip", first).locator(".badge")).to_have_text("2")
    expect(page.locator("#main-strip .cell")).to_have_count(2)
    expect(page.locator("#dlq-depth")).to_have_text("depth = 1")
    # the DLQ says when its oldest dead letter expires (the DLQ's retention, 14 days)
    expect(page.locator("#dlq-expiry")).to_contain_text("oldest expires ")
    assert {second, third} == set(
        page.locator("#main-strip .cell").evaluate_all("cells => cells.map(c => c.dataset.id)")
    )
    expect(page.locator("#threshold")).to_contain_text("maxClaimCount = 2")
    # The page learnt of the changes from the live feed, not only from its slow refresh
    assert int(page.locator("#live").get_attribute("data-events") or 0) >= 5


def dead_letter_mix(api: Api) -> dict[str, list[str]]:
    """Two sources, two reasons, two error texts in one DLQ."""
    api.queue(DLQ)
    api.queue("orders", _max_claim_count=1, _dead_letter_queue=DLQ)
    api.queue("payments", _max_claim_count=1, _dead_letter_queue=DLQ)
    out: dict[str, list[str]] = {"timeout": [], "negative": [], "max_claims": []}
    for queue, error in (("orders", "timeout after 30 ms"), ("payments", "negative total -3")):
        ids = api.send(queue, {"q": queue, "n": 1}, {"q": queue, "n": 2})
        claim_id, _ = api.claim(queue, limit=2)
        assert claim_id is not None
        for message_id in ids:
            api.reject(queue, message_id, claim_id, error)
        out[error.split()[0]] += ids
    (stuck,) = api.send("orders", {"q": "orders", "n": 3})
    claim_id, _ = api.claim("orders")
    assert claim_id is not None
    api.release("orders", claim_id)  # given back at its limit: moved, max_claims
    out["max_claims"].append(stuck)
    return out


def shown_ids(page: Any) -> set[str]:
    return set(
        page.locator("#dead-letters tr[data-id]").evaluate_all(
            "rows => rows.map(r => r.dataset.id)"
        )
    )


def test_the_dead_letter_browser_filters_by_source_reason_and_error_text(
    api: Api, page: Any
) -> None:
    ids = dead_letter_mix(api)
    page.goto(f"/console/#/dlq/{DLQ}")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(5)
    screenshot(page, "dead-letters")
    # By source
    page.select_option("#filter-source", "payments")
    page.click("#filter-apply")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(2)
    assert shown_ids(page) == set(ids["negative"])
    # By reason, any source
    page.select_option("#filter-source", "")
    page.select_option("#filter-reason", "max_claims")
    page.click("#filter-apply")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(1)
    assert shown_ids(page) == set(ids["max_claims"])
    # By text in the error
    page.select_option("#filter-reason", "")
    page.fill("#filter-text", "timeout after")
    page.click("#filter-apply")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(2)
    assert shown_ids(page) == set(ids["timeout"])
    # A message's page: body, provenance
    page.click(f"#dead-letters tr[data-id='{ids['timeout'][0]}'] a")
    expect(page.locator("#message-body")).to_contain_text('"q": "orders"')
    expect(page.locator("main")).to_contain_text("timeout after 30 ms")


def test_the_redrive_button_moves_the_dead_letters_back_and_the_bar_reaches_100(
    api: Api, page: Any
) -> None:
    ids = dead_letter_mix(api)
    page.goto(f"/console/#/dlq/{DLQ}")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(5)
    # When the operator redrives what came from orders, at a rate
    page.click("#redrive-button")
    page.fill("#redrive-source", "orders")
    page.fill("#redrive-rate", "100")
    page.click("#redrive-start")
    # I expect the bar to reach 100% and the list to keep only the payments' dead letters
    expect(page.locator("#redrive-percent")).to_have_text("100%")
    expect(page.locator("#redrive-progress")).to_have_attribute("data-status", "COMPLETED")
    expect(page.locator("#redrive-status")).to_contain_text("3 of 3 moved")
    screenshot(page, "redrive")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(2)
    assert shown_ids(page) == set(ids["negative"])
    assert {m["provenance"]["source_queue"] for m in api.dead_letters(DLQ)} == {"payments"}
    back = api.request(
        "GET", "/v2/queues/orders/messages", params={"echo": "true", "include_claimed": "true"}
    ).json()["messages"]
    assert sorted(m["body"]["n"] for m in back) == [1, 2, 3]
    assert all(m["claim_count"] == 0 for m in back)
    # and, when one of them dies again, the panel to follow how the group fared
    expect(page.locator("#redrive-follow")).to_contain_text("0 of 3 came back dead, 3 still out")
    claim_id, [message] = api.claim("orders")
    assert claim_id is not None
    api.reject("orders", message["id"], claim_id, "KeyError: 'customer'")
    expect(page.locator("#redrive-follow")).to_contain_text("1 of 3 came back dead", timeout=15_000)


def test_a_pattern_redrives_only_its_messages(api: Api, page: Any) -> None:
    ids = dead_letter_mix(api)
    api.request(
        "PUT",
        f"/v2/queues/{DLQ}/patterns",
        json={
            "patterns": [
                {
                    "id": "p1",
                    "template": "timeout after <*> ms",
                    "count": 2,
                    "message_ids": ids["timeout"],
                },
                {
                    "id": "p2",
                    "template": "negative total <*>",
                    "count": 2,
                    "message_ids": ids["negative"],
                },
            ]
        },
    )
    page.goto(f"/console/#/dlq/{DLQ}/patterns")
    expect(page.locator("#patterns tr[data-pattern]")).to_have_count(2)
    # Browse one pattern's messages
    page.click("#patterns tr[data-pattern='p1'] a")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(2)
    assert shown_ids(page) == set(ids["timeout"])
    # Redrive only them
    page.go_back()
    page.click("#patterns tr[data-pattern='p1'] button")
    expect(page.locator("#redrive-pattern")).to_have_value("p1")
    page.click("#redrive-start")
    expect(page.locator("#redrive-percent")).to_have_text("100%")
    left = {m["id"] for m in api.dead_letters(DLQ)}
    assert left == set(ids["negative"] + ids["max_claims"])


def test_deleting_selected_dead_letters_asks_first(api: Api, page: Any) -> None:
    ids = dead_letter_mix(api)
    page.goto(f"/console/#/dlq/{DLQ}")
    victim = ids["negative"][0]
    page.check(f"#dead-letters tr[data-id='{victim}'] input")
    expect(page.locator("#selected-count")).to_have_text("1 selected")
    # Cancelling the confirmation deletes nothing
    page.click("#delete-selected")
    page.click("#confirm button[value='cancel']")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(5)
    # Confirming deletes only the selected one
    page.click("#delete-selected")
    page.click("#confirm-ok")
    expect(page.locator("#dead-letters tr[data-id]")).to_have_count(4)
    assert victim not in {m["id"] for m in api.dead_letters(DLQ)}
    assert len(api.dead_letters(DLQ)) == 4
