"""The dead-letter extensions end to end over HTTP: moves, browsing, sources, explicit
dead-lettering, release, redrive tasks and failure patterns."""

from __future__ import annotations

from typing import Any

import pytest

from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from tests.api.zaqar.conftest import ApiClient, claim, make_queue, post, with_dlq


def poison(api: ApiClient, clock: ManualClock, queue: str, times: int) -> None:
    """Claim and let the claim expire, `times` times."""
    for _ in range(times):
        claim(api, queue, ttl=60)
        clock.advance(61)


def dead_letters(api: ApiClient, dlq: str, query: str = "") -> list[dict[str, Any]]:
    r = api.get(f"/v2/queues/{dlq}/dead_letters{query}")
    assert r.status_code == 200, r.text
    messages: list[dict[str, Any]] = r.json()["messages"]
    return messages


def test_a_message_claimed_n_plus_one_times_is_in_the_dlq_visible_at_once(
    api: ApiClient, clock: ManualClock
) -> None:
    # Given a queue whose DLQ is orders-dlq after 3 claims
    with_dlq(api, n=3)
    (mid,) = post(api, "orders", {"order": 7})
    poison(api, clock, "orders", 3)
    # when it is claimed a fourth time, nothing is delivered
    assert api.post("/v2/queues/orders/claims", json={}).status_code == 204
    # and it is in the DLQ, unclaimed, with its provenance
    (moved,) = dead_letters(api, "orders-dlq")
    assert moved["id"] == mid and moved["body"] == {"order": 7}
    prov = moved["provenance"]
    assert prov["source_queue"] == "orders" and prov["reason"] == "max_claims"
    assert prov["claim_count"] == 3 and prov["original_message_id"] == mid
    assert prov["dead_lettered_at"].endswith("Z")
    assert moved["attributes"]["DLQ.sourceQueue"] == {"type": "String", "value": "orders"}
    assert moved["history"][0]["event"] == "dead_lettered"
    # visible at once: a consumer of the DLQ can claim it now
    _, got = claim(api, "orders-dlq")
    assert [m["id"] for m in got] == [mid]
    stats = api.get("/v2/queues/orders/stats").json()["dead_letter"]
    assert stats["dead_lettered"] == {"max_claims": 1} and stats["policy_active"] is True
    assert api.get("/v2/queues/orders-dlq/stats").json()["dead_letter"]["by_source"] == {
        "orders": 1
    }


def test_the_dlq_message_ttl_is_applied(api: ApiClient, clock: ManualClock) -> None:
    make_queue(api, "dlq")
    make_queue(
        api,
        "src",
        _max_claim_count=1,
        _dead_letter_queue="dlq",
        _dead_letter_queue_messages_ttl=120,
    )
    post(api, "src", 1, ttl=3600)
    poison(api, clock, "src", 1)
    claim(api, "src")
    (m,) = dead_letters(api, "dlq")
    clock.advance(121)
    assert dead_letters(api, "dlq") == []
    assert m["provenance"]["reason"] == "max_claims"


def test_browse_filters_by_source_reason_and_time_and_pages(
    api: ApiClient, clock: ManualClock
) -> None:
    make_queue(api, "dlq")
    make_queue(api, "a", _max_claim_count=1, _dead_letter_queue="dlq")
    make_queue(api, "b", _max_claim_count=1, _dead_letter_queue="dlq")
    post(api, "a", *range(5))
    post(api, "b", *range(3))
    poison(api, clock, "a", 1)
    poison(api, clock, "b", 1)
    start = clock.now()
    claim(api, "a")
    clock.advance(10)
    claim(api, "b")
    assert len(dead_letters(api, "dlq")) == 8
    assert len(dead_letters(api, "dlq", "?source_queue=a")) == 5
    assert len(dead_letters(api, "dlq", "?source_queue=b&reason=max_claims")) == 3
    assert dead_letters(api, "dlq", "?reason=rejected") == []
    assert len(dead_letters(api, "dlq", f"?until={start + 5}")) == 5
    assert len(dead_letters(api, "dlq", f"?since={start + 5}")) == 3
    # paging: a full page has a next link, the last one does not
    r = api.get("/v2/queues/dlq/dead_letters?limit=3&source_queue=a").json()
    seen = [m["id"] for m in r["messages"]]
    pages = 1
    while r["links"]:
        r = api.get(r["links"][0]["href"]).json()
        seen += [m["id"] for m in r["messages"]]
        pages += 1
        assert all(m["provenance"]["source_queue"] == "a" for m in r["messages"])
    assert pages == 2 and len(set(seen)) == 5
    assert api.get("/v2/queues/dlq/dead_letters?limit=1001").status_code == 400
    assert api.get("/v2/queues/dlq/dead_letters?reason=tired").status_code == 400
    assert api.get("/v2/queues/dlq/dead_letters?since=yesterday").status_code == 400
    assert api.get("/v2/queues/none/dead_letters").status_code == 404


def test_browse_accepts_iso_times(api: ApiClient, clock: ManualClock) -> None:
    with_dlq(api, n=1)
    post(api, "orders", 1)
    poison(api, clock, "orders", 1)
    claim(api, "orders")
    (m,) = dead_letters(api, "orders-dlq")
    at = m["provenance"]["dead_lettered_at"]
    assert len(dead_letters(api, "orders-dlq", f"?since={at}")) == 1
    assert dead_letters(api, "orders-dlq", f"?until={at}") == []


def test_sources_of_a_dlq(api: ApiClient) -> None:
    with_dlq(api, "a", "dlq", n=2)
    make_queue(api, "b", _max_claim_count=5, _dead_letter_queue="dlq")
    sources = api.get("/v2/queues/dlq/dead_letter_sources").json()["sources"]
    assert sorted((s["name"], s["max_claim_count"], s["active"]) for s in sources) == [
        ("a", 2, True),
        ("b", 5, True),
    ]
    assert sources[0]["href"] == f"/v2/queues/{sources[0]['name']}"


def test_deleting_the_dlq_turns_the_policy_inactive(api: ApiClient) -> None:
    with_dlq(api, "a", "dlq")
    assert api.delete("/v2/queues/dlq?force=true").status_code == 204
    assert api.get("/v2/queues/a").json()["_dead_letter_policy_active"] is False
    assert api.get("/v2/queues/a/stats").json()["dead_letter"]["dlq_missing"] is True


def test_explicit_dead_letter_of_one_claimed_message(api: ApiClient) -> None:
    with_dlq(api)
    (mid,) = post(api, "orders", "bad")
    cid, _ = claim(api, "orders")
    href = f"/v2/queues/orders/messages/{mid}/dead_letter"
    assert api.post(href, json={}).status_code == 403
    assert (
        api.post(href + "?claim_id=00000000-0000-4000-8000-000000000000", json={}).status_code
        == 400
    )
    # Neither refusal moved it: it is still in its queue, under its claim.
    assert dead_letters(api, "orders-dlq") == []
    assert api.get(f"/v2/queues/orders/claims/{cid}").json()["messages"][0]["id"] == mid
    r = api.post(f"{href}?claim_id={cid}", json={"description": "bad input", "error": "Traceback"})
    assert r.status_code == 200, r.text
    m = r.json()["message"]
    assert m["id"] == mid and m["href"] == f"/v2/queues/orders-dlq/messages/{mid}"
    assert m["provenance"]["reason"] == "rejected"
    assert m["provenance"]["description"] == "bad input" and m["provenance"]["error"] == "Traceback"
    assert [d["id"] for d in dead_letters(api, "orders-dlq", "?reason=rejected")] == [mid]


def test_explicit_dead_letter_in_a_batch(api: ApiClient) -> None:
    with_dlq(api)
    post(api, "orders", 1, 2, 3)
    cid, messages = claim(api, "orders", limit=2)
    r = api.post(
        "/v2/queues/orders/dead_letter",
        json={"messages": [{"id": m["id"], "claim_id": cid} for m in messages], "description": "x"},
    )
    assert r.status_code == 200, r.text
    assert len(r.json()["messages"]) == 2
    assert api.get("/v2/queues/orders/stats").json()["messages"]["total"] == 1
    assert api.post("/v2/queues/orders/dead_letter", json={"messages": []}).status_code == 400
    _, kept = claim(api, "orders")
    missing_claim = {"messages": [{"id": kept[0]["id"]}]}
    assert api.post("/v2/queues/orders/dead_letter", json=missing_claim).status_code == 403
    assert len(dead_letters(api, "orders-dlq")) == 2
    assert api.get("/v2/queues/orders/stats").json()["messages"]["total"] == 1


def test_explicit_dead_letter_without_a_policy_or_on_a_dlq_is_409(api: ApiClient) -> None:
    with_dlq(api)
    make_queue(api, "plain")
    for queue in ("plain", "orders-dlq"):
        (mid,) = post(api, queue, 1)
        cid, _ = claim(api, queue)
        r = api.post(f"/v2/queues/{queue}/messages/{mid}/dead_letter?claim_id={cid}", json={})
        assert r.status_code == 409, r.text
        # The refused message stays where it was, claimed; nothing reached a DLQ.
        assert api.get(f"/v2/queues/{queue}/claims/{cid}").json()["messages"][0]["id"] == mid


def test_on_expiry_only_eligible_messages_are_dead_lettered(
    api: ApiClient, clock: ManualClock, engine: Engine
) -> None:
    make_queue(api, "dlq")
    make_queue(
        api, "src", _max_claim_count=3, _dead_letter_queue="dlq", _dead_letter_on_expiry=True
    )
    post(api, "src", "keep", ttl=60)
    post(api, "src", "drop", ttl=60, dead_letter_eligible=False)
    clock.advance(61)
    engine.sweep_expired()
    (m,) = dead_letters(api, "dlq")
    assert m["body"] == "keep" and m["provenance"]["reason"] == "expired"
    stats = api.get("/v2/queues/src/stats").json()["dead_letter"]
    assert stats["dead_lettered"] == {"expired": 1} and stats["expired_dropped"] == 1


def test_release_makes_a_message_visible_again_after_its_delay(
    api: ApiClient, clock: ManualClock
) -> None:
    make_queue(api, "q")
    (mid,) = post(api, "q", "job")
    cid, _ = claim(api, "q")
    href = f"/v2/queues/q/messages/{mid}/release"
    assert api.post(href, json={}).status_code == 403
    assert api.post(f"{href}?claim_id={cid}", json={"delay": -1}).status_code == 400
    # Neither refusal released it: it is still under its claim.
    assert api.get(f"/v2/queues/q/claims/{cid}").json()["messages"][0]["id"] == mid
    assert api.post(f"{href}?claim_id={cid}", json={"delay": 30}).status_code == 204
    assert claim(api, "q") == (None, [])
    clock.advance(31)
    _, got = claim(api, "q")
    assert [m["id"] for m in got] == [mid]
    assert got[0]["claim_count"] == 2


def _dead(api: ApiClient, clock: ManualClock, bodies: list[Any], source: str = "orders") -> None:
    post(api, source, *bodies)
    poison(api, clock, source, 1)
    claim(api, source, limit=20)


def test_redrive_task_runs_to_completion_by_steps(
    api: ApiClient, clock: ManualClock, engine: Engine
) -> None:
    with_dlq(api, n=1)
    _dead(api, clock, [1, 2, 3])
    r = api.post("/v2/queues/orders-dlq/redrives", json={})
    assert r.status_code == 201, r.text
    task = r.json()
    assert r.headers["Location"] == f"/v2/queues/orders-dlq/redrives/{task['id']}"
    assert task["status"] == "RUNNING" and task["to_move"] == 3 and task["moved"] == 0
    assert task["href"] == r.headers["Location"] and task["dlq"] == "orders-dlq"
    # another task on the same DLQ while this one runs is a conflict
    assert api.post("/v2/queues/orders-dlq/redrives", json={}).status_code == 409
    engine.redrive_step(task["id"], 2)
    assert api.get(task["href"]).json()["moved"] == 2
    engine.redrive_step(task["id"], 2)
    engine.redrive_step(task["id"], 2)
    done = api.get(task["href"]).json()
    assert done["status"] == "COMPLETED" and done["moved"] == 3
    assert dead_letters(api, "orders-dlq") == []
    _, back = claim(api, "orders")
    assert sorted(m["body"] for m in back) == [1, 2, 3]
    assert all(m["claim_count"] == 1 for m in back)
    assert back[0]["history"][-1]["event"] == "redriven"
    assert api.delete(task["href"]).status_code == 409


def test_redrive_with_a_filter_and_destination_run_by_the_worker(
    api: ApiClient, clock: ManualClock, engine: Engine
) -> None:
    with_dlq(api, n=1)
    make_queue(api, "retry")
    _dead(api, clock, ["a", "b"])
    ids = [m["id"] for m in dead_letters(api, "orders-dlq")]
    r = api.post(
        "/v2/queues/orders-dlq/redrives",
        json={
            "destination": "retry",
            "message_ids": ids[:1],
            "source_queue": "orders",
            "reason": "max_claims",
        },
    )
    assert r.status_code == 201, r.text
    task = r.json()
    assert task["filter"]["message_ids"] == ids[:1] and task["destination"] == "retry"
    worker = Worker(engine)
    while api.get(task["href"]).json()["status"] == "RUNNING":
        worker.run_once()
    assert api.get(task["href"]).json()["status"] == "COMPLETED"
    assert [
        m["body"] for m in api.get("/v2/queues/retry/messages?echo=true").json()["messages"]
    ] == ["a"]
    assert len(dead_letters(api, "orders-dlq")) == 1


def test_cancelling_a_redrive(api: ApiClient, clock: ManualClock, engine: Engine) -> None:
    with_dlq(api, n=1)
    _dead(api, clock, [1, 2])
    task = api.post("/v2/queues/orders-dlq/redrives", json={"rate": 1}).json()
    assert task["rate"] == 1
    r = api.delete(task["href"])
    assert r.status_code == 202 and r.json()["status"] == "CANCELLING"
    engine.redrive_step(task["id"], 10)
    assert api.get(task["href"]).json()["status"] == "CANCELLED"
    assert len(dead_letters(api, "orders-dlq")) == 2
    listed = api.get("/v2/queues/orders-dlq/redrives").json()["redrives"]
    assert [t["id"] for t in listed] == [task["id"]]


def test_redrive_tasks_are_listed_newest_first(
    api: ApiClient, clock: ManualClock, engine: Engine
) -> None:
    with_dlq(api, n=1)
    _dead(api, clock, [1])
    first = api.post("/v2/queues/orders-dlq/redrives", json={}).json()
    engine.redrive_step(first["id"], 10)
    engine.redrive_step(first["id"], 10)
    clock.advance(1)
    second = api.post("/v2/queues/orders-dlq/redrives", json={}).json()
    listed = api.get("/v2/queues/orders-dlq/redrives").json()["redrives"]
    assert [t["id"] for t in listed] == [second["id"], first["id"]]


@pytest.mark.parametrize(
    "body",
    [
        {"destination": "orders-dlq"},
        {"destination": "missing"},
        {"reason": "bored"},
        {"rate": 0},
        {"rate": "fast"},
        {"message_ids": "x"},
        {"since": "not a time"},
        {"message_ids": ["a"], "pattern_id": "p"},
    ],
)
def test_invalid_redrives_are_refused(api: ApiClient, body: dict[str, Any]) -> None:
    with_dlq(api)
    r = api.post("/v2/queues/orders-dlq/redrives", json=body)
    assert r.status_code in (400, 404), r.text
    # A refused redrive leaves no task behind.
    assert api.get("/v2/queues/orders-dlq/redrives").json()["redrives"] == []


def test_redrive_of_a_queue_that_is_no_dlq_and_unknown_tasks(api: ApiClient) -> None:
    make_queue(api, "plain")
    assert api.post("/v2/queues/plain/redrives", json={}).status_code == 400
    assert api.get("/v2/queues/plain/redrives").json()["redrives"] == []
    assert api.get("/v2/queues/plain/redrives/nope").status_code == 404
    assert api.delete("/v2/queues/plain/redrives/nope").status_code == 404


def test_patterns_are_stored_and_pick_a_redrive(
    api: ApiClient, clock: ManualClock, engine: Engine
) -> None:
    with_dlq(api, n=1)
    _dead(api, clock, ["timeout", "bad json", "timeout"])
    letters = dead_letters(api, "orders-dlq")
    timeouts = [m["id"] for m in letters if m["body"] == "timeout"]
    patterns = [
        {"id": "p1", "template": "timeout", "count": 2, "message_ids": timeouts, "share": 0.66},
        {"id": "p2", "template": "bad json", "count": 1, "message_ids": []},
    ]
    assert api.put("/v2/queues/orders-dlq/patterns", json={"patterns": patterns}).status_code == 204
    got = api.get("/v2/queues/orders-dlq/patterns").json()["patterns"]
    # Stored as given, each stamped with the alert it raised (both new here)
    assert [{k: v for k, v in p.items() if k != "alert"} for p in got] == patterns
    assert [p["alert"]["kind"] for p in got] == ["new", "new"]
    assert (
        api.put("/v2/queues/orders-dlq/patterns", json={"patterns": [{"x": 1}]}).status_code == 400
    )
    assert api.post("/v2/queues/orders-dlq/redrives", json={"pattern_id": "zz"}).status_code == 404
    assert api.get("/v2/queues/orders-dlq/redrives").json()["redrives"] == []
    r = api.post("/v2/queues/orders-dlq/redrives", json={"pattern_id": "p1"})
    task = r.json()
    assert task["filter"]["pattern_id"] == "p1" and sorted(task["filter"]["message_ids"]) == sorted(
        timeouts
    )
    assert task["to_move"] == 2
    engine.redrive_step(task["id"], 10)
    assert [m["body"] for m in dead_letters(api, "orders-dlq")] == ["bad json"]


def test_stored_patterns_alert_once_and_count_by_kind_in_metrics(api: ApiClient) -> None:
    with_dlq(api, n=1)
    put = lambda *p: api.put("/v2/queues/orders-dlq/patterns", json={"patterns": list(p)})  # noqa: E731
    assert put({"id": "p1", "rate_per_minute": 2}).status_code == 204
    assert put({"id": "p1", "rate_per_minute": 30}, {"id": "p2"}).status_code == 204
    assert put({"id": "p1", "rate_per_minute": 30}, {"id": "p2"}).status_code == 204
    metrics = api.get("/metrics").text
    assert 'deadletter_pattern_alerts_total{kind="new"} 2.0' in metrics
    assert 'deadletter_pattern_alerts_total{kind="rate_jump"} 1.0' in metrics


@pytest.mark.parametrize("rate", [-1, "fast", None, [1]])
def test_a_pattern_rate_that_is_no_number_is_refused_in_zaqar_form(
    api: ApiClient, rate: Any
) -> None:
    with_dlq(api, n=1)
    doc = {"patterns": [{"id": "p1", "rate_per_minute": rate}]}
    r = api.put("/v2/queues/orders-dlq/patterns", json=doc)
    if rate is None:
        assert r.status_code == 204  # no rate: nothing to compare
        return
    assert r.status_code == 400 and set(r.json()) == {"title", "description"}
    assert api.get("/v2/queues/orders-dlq/patterns").json()["patterns"] == []


@pytest.mark.parametrize("batch", [False, True], ids=["one", "batch"])
def test_a_consumers_own_reason_is_kept_beside_the_reason_rejected(
    api: ApiClient, batch: bool
) -> None:
    # Given a consumer that dead-letters a message with its own reason (Azure's DeadLetter)
    with_dlq(api)
    (mid,) = post(api, "orders", "bad")
    cid, _ = claim(api, "orders")
    if batch:
        href, body = "/v2/queues/orders/dead_letter", {"messages": [{"id": mid, "claim_id": cid}]}
    else:
        href, body = f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={cid}", {}
    # giving it both as reason and as description is refused, naming both
    both = api.post(href, json={**body, "reason": "InvalidPayload", "description": "x"})
    assert both.status_code == 400
    assert "reason and description" in both.json()["description"]
    r = api.post(href, json={**body, "reason": "InvalidPayload"})
    assert r.status_code == 200, r.text
    # I expect the dead letter's reason to stay rejected, the consumer's words beside it
    (dead,) = dead_letters(api, "orders-dlq")
    assert dead["provenance"]["reason"] == "rejected"
    assert dead["provenance"]["description"] == "InvalidPayload"
