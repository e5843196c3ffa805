"""A redrive with a canary over HTTP: the body's fields, refused before anything is written,
and the task's record of the canary's outcome."""

from __future__ import annotations

from typing import Any

import pytest

from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from tests.api.zaqar.conftest import ApiClient, claim, post, with_dlq

REDRIVES = "/v2/queues/orders-dlq/redrives"


def _dead(api: ApiClient, clock: ManualClock, *bodies: Any) -> None:
    """Dead letters of "orders" (one delivery allowed): claimed once, the claim lapsing."""
    post(api, "orders", *bodies)
    claim(api, "orders", ttl=60, limit=20)
    clock.advance(61)
    claim(api, "orders", limit=20)


def _letters(api: ApiClient) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = api.get("/v2/queues/orders-dlq/dead_letters").json()[
        "messages"
    ]
    return messages


def test_a_canary_of_a_still_failing_pattern_pauses_with_its_verdict(
    api: ApiClient, clock: ManualClock, engine: Engine
) -> None:
    # Given four timeouts and a bad message in the DLQ, and the pattern of the timeouts
    with_dlq(api, n=1)
    _dead(api, clock, "timeout", "timeout", "bad json", "timeout", "timeout")
    timeouts = [m["id"] for m in _letters(api) if m["body"] == "timeout"]
    patterns = [{"id": "p-7", "template": "timeout", "count": 4, "message_ids": timeouts}]
    assert api.put("/v2/queues/orders-dlq/patterns", json={"patterns": patterns}).status_code == 204
    # When a redrive of that pattern starts with a canary of one, watched for 30 s
    r = api.post(REDRIVES, json={"pattern_id": "p-7", "canary": 1, "watch": 30})
    assert r.status_code == 201, r.text
    task = r.json()
    assert task["canary"]["requested"] == 1 and task["canary"]["size"] == 1
    worker = Worker(engine, sweep_interval=3600)
    worker.run_once()
    moving = api.get(task["href"]).json()
    assert (moving["status"], moving["moved"], moving["canary"]["sample"]) == ("RUNNING", 1, 1)
    assert moving["canary"]["sample_ids"][0] in timeouts
    # and the consumer still fails it
    _, (back,) = claim(api, "orders", ttl=60)
    assert back["body"] == "timeout"
    clock.advance(61)
    claim(api, "orders")
    worker.run_once()
    # Then the task is paused with the reason, and nothing else moved
    paused = api.get(task["href"]).json()
    assert paused["status"] == "PAUSED" and paused["moved"] == 1
    assert paused["filter"]["pattern_id"] == "p-7"
    outcome = paused["canary"]
    assert (outcome["redeaths"], outcome["decision"]) == (1, "paused")
    assert outcome["reason"] == "1 of 1 canaries died again: pattern p-7 still failing"
    assert len(_letters(api)) == 5
    clock.advance(3600)
    worker.run_once()
    assert api.get(task["href"]).json()["moved"] == 1
    # A paused task is cancelled at once.
    r = api.delete(task["href"])
    assert r.status_code == 202 and r.json()["status"] == "CANCELLED"


def test_a_canary_of_a_fixed_failure_completes(
    api: ApiClient, clock: ManualClock, engine: Engine
) -> None:
    with_dlq(api, n=1)
    _dead(api, clock, *range(8))
    r = api.post(REDRIVES, json={"canary": "25%", "watch": 10, "max_redeath": 50})
    assert r.status_code == 201, r.text
    task = r.json()
    assert task["canary"]["requested"] == "25%" and task["canary"]["size"] == 2
    worker = Worker(engine, sweep_interval=3600)
    worker.run_once()
    cid, got = claim(api, "orders")
    assert len(got) == 2
    for m in got:
        assert api.delete(f"/v2/queues/orders/messages/{m['id']}?claim_id={cid}").status_code == 204
    worker.run_once()
    assert api.get(task["href"]).json()["moved"] == 2
    clock.advance(10)
    while worker.run_once():
        pass
    done = api.get(task["href"]).json()
    assert (done["status"], done["moved"]) == ("COMPLETED", 8)
    assert (done["canary"]["decision"], done["canary"]["redeaths"]) == ("continued", 0)
    assert _letters(api) == []


@pytest.mark.parametrize(
    "body",
    [
        {"canary": 0},
        {"canary": -3},
        {"canary": True},
        {"canary": "many"},
        {"canary": "0%"},
        {"canary": "150%"},
        {"canary": 2_000_000},
        {"canary": [1]},
        {"canary": 5, "watch": 0},
        {"canary": 5, "watch": 100_000},
        {"canary": 5, "watch": "soon"},
        {"canary": 5, "max_redeath": 101},
        {"canary": 5, "max_redeath": -1},
        {"canary": 5, "max_redeath": "10%"},
        {"canary": 10_001},
        {"canary": 5, "seed": -1},
        {"canary": 5, "seed": 2**32},
        {"canary": 5, "seed": "7"},
        {"canary": 5, "force": "yes"},
        {"watch": 30},
        {"max_redeath": 10},
        {"seed": 7},
        {"force": True},
    ],
)
def test_a_canary_out_of_range_is_refused_before_any_task_is_written(
    api: ApiClient, clock: ManualClock, body: dict[str, Any]
) -> None:
    with_dlq(api, n=1)
    _dead(api, clock, "x")
    r = api.post(REDRIVES, json=body)
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"title", "description"}
    assert api.get(REDRIVES).json()["redrives"] == []


def test_a_paused_task_resumed_moves_the_rest_and_keeps_its_verdict(
    api: ApiClient, clock: ManualClock, engine: Engine
) -> None:
    # Given a task its canary of one paused: the sample died again
    with_dlq(api, n=1)
    _dead(api, clock, "a", "b", "c")
    task = api.post(REDRIVES, json={"canary": 1, "watch": 30}).json()
    worker = Worker(engine, sweep_interval=3600)
    worker.run_once()
    claim(api, "orders", ttl=60)
    clock.advance(61)
    claim(api, "orders")
    worker.run_once()
    assert api.get(task["href"]).json()["status"] == "PAUSED"
    # When it is resumed (the cause fixed by hand)
    r = api.post(task["href"] + "/resume")
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "RUNNING"
    while worker.run_once():
        pass
    # Then it moves the rest of what it selected, and its record keeps the verdict and the resume
    done = api.get(task["href"]).json()
    assert (done["status"], done["moved"]) == ("COMPLETED", 3)
    assert done["canary"]["decision"] == "paused" and done["canary"]["resumed_at"]
    assert len(_letters(api)) == 1  # the canary that died again came after its selection
    # and a task that is not paused is not resumed.
    again = api.post(task["href"] + "/resume")
    assert again.status_code == 409 and again.json()["title"] == "Redrive task not paused"


def test_an_impure_pattern_is_refused_a_canary_unless_forced_and_the_task_shows_its_draw(
    api: ApiClient, clock: ManualClock
) -> None:
    # Given a pattern the analysis flagged impure
    with_dlq(api, n=1)
    _dead(api, clock, *[f"m{i}" for i in range(6)])
    ids = [m["id"] for m in _letters(api)]
    patterns = [{"id": "p-9", "template": "x", "count": 6, "message_ids": ids, "impure": True}]
    assert api.put("/v2/queues/orders-dlq/patterns", json={"patterns": patterns}).status_code == 204
    # A canary over it is refused, and nothing is written
    r = api.post(REDRIVES, json={"pattern_id": "p-9", "canary": 2})
    assert r.status_code == 409 and r.json()["title"] == "Pattern impure"
    assert "flagged impure" in r.json()["description"]
    assert api.get(REDRIVES).json()["redrives"] == []
    # With force it starts, and says what its sample was drawn across, from which seed
    r = api.post(REDRIVES, json={"pattern_id": "p-9", "canary": 2, "force": True, "seed": 7})
    assert r.status_code == 201, r.text
    canary = r.json()["canary"]
    # (the template reads none of these dead letters, which carry no error: drawn at random)
    assert (canary["seed"], canary["force"], canary["drawn_by"]) == (7, True, "random")
    assert canary["coverage"] == (
        "2 dead letters drawn at random: no error text to tell kinds apart"
    )
    assert api.get(r.json()["href"]).json()["canary"] == canary
