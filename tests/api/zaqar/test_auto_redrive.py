"""A DLQ's automatic redrive over HTTP: set, read, stop, resume, delete; its body refused
before anything is written; its rounds as redrive tasks, driven by the worker."""

from __future__ import annotations

from typing import Any

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import filters
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from tests.api.zaqar.conftest import ApiClient, claim, make_queue, post, with_dlq
from tests.support.blank_values import BLANKS

AUTO = "/v2/queues/orders-dlq/dead_letters/auto_redrive"
POLICY = {"filter": {}, "interval": 600, "max_rounds": 2}


def _dead(api: ApiClient, clock: ManualClock, *bodies: Any) -> None:
    """Dead letters of "orders" (one delivery allowed): claimed once, the claim lapsing."""
    if bodies:
        post(api, "orders", *bodies)
    claim(api, "orders", ttl=60, limit=20)
    clock.advance(61)
    claim(api, "orders", limit=20)


def _turns(worker: Worker) -> None:
    for _ in range(3):
        worker.run_once()


def test_a_policy_sends_back_each_round_then_keeps_with_the_reason(
    api: ApiClient, clock: ManualClock, engine: Engine
) -> None:
    # Given two dead letters in "orders-dlq"
    with_dlq(api, n=1)
    _dead(api, clock, "a", "b")
    # When a policy of two rounds, every ten minutes, with a canary of one, is set
    r = api.put(AUTO, json={**POLICY, "canary": 1, "watch": 60})
    assert r.status_code == 201, r.text
    assert r.headers["Location"] == AUTO
    policy = r.json()
    assert (policy["state"], policy["rounds"], policy["last_round"]) == ("active", 0, None)
    assert policy["canary"] == {"size": 1, "watch": 60.0, "max_redeath": 0.0, "force": False}
    assert policy["next_round_at"] is not None
    # Then the worker's first round is a redrive task of the DLQ, with its canary
    worker = Worker(engine, sweep_interval=0)
    worker.run_once()
    policy = api.get(AUTO).json()
    assert policy["rounds"] == 1 and policy["last_round"]["outcome"] == "running"
    task = api.get(policy["last_round"]["task_href"]).json()
    assert task["auto_redrive"] is True and task["canary"]["size"] == 1
    assert [t["id"] for t in api.get("/v2/queues/orders-dlq/redrives").json()["redrives"]] == [
        task["id"]
    ]
    # and once the canary's watch is over, the rest goes back too
    clock.advance(60)
    _turns(worker)
    policy = api.get(AUTO).json()
    assert policy["last_round"]["outcome"] == "completed" and policy["moved"] == 2
    # They fail again twice; the third round keeps them, each with the reason in its history
    for _ in range(2):
        _dead(api, clock)
        clock.advance(600)
        _turns(worker)
        clock.advance(60)
        _turns(worker)
    _dead(api, clock)
    clock.advance(600)
    _turns(worker)
    policy = api.get(AUTO).json()
    assert (policy["rounds"], policy["exhausted"]) == (2, 2)
    assert policy["last_round"]["outcome"] == "nothing_to_redrive"
    assert policy["last_round"]["kept"] == 2
    kept = api.get("/v2/queues/orders-dlq/dead_letters").json()["messages"]
    assert {m["body"] for m in kept} == {"a", "b"}


def test_stop_resume_and_delete(api: ApiClient, clock: ManualClock, engine: Engine) -> None:
    with_dlq(api, n=1)
    _dead(api, clock, "a")
    assert api.put(AUTO, json={**POLICY, "rate": 0.5}).status_code == 201
    Worker(engine, sweep_interval=0).run_once()
    stopped = api.post(AUTO + "/stop")
    assert stopped.status_code == 200, stopped.text
    assert (stopped.json()["state"], stopped.json()["next_round_at"]) == ("stopped", None)
    assert stopped.json()["last_round"]["outcome"] == "cancelled"
    resumed = api.post(AUTO + "/resume")
    assert resumed.status_code == 200 and resumed.json()["state"] == "active"
    again = api.post(AUTO + "/resume")
    assert again.status_code == 409 and again.json()["title"] == "Automatic redrive active"
    # A replacement keeps the counters: 200, not 201.
    replaced = api.put(AUTO, json={**POLICY, "interval": 120})
    assert replaced.status_code == 200 and replaced.json()["rounds"] == 1
    assert api.delete(AUTO).status_code == 204
    assert api.get(AUTO).status_code == 404
    assert api.delete(AUTO).status_code == 204
    assert api.post(AUTO + "/stop").status_code == 404
    assert api.get("/v2/queues/nowhere/dead_letters/auto_redrive").status_code == 404


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"interval": 600, "max_rounds": 2}, "filter must be an object"),
        ({**POLICY, "filter": None}, "filter must be an object"),
        ({**POLICY, "filter": {"source_queue": ""}}, "filter: source_queue is empty"),
        ({**POLICY, "filter": {"attribute": []}}, "filter: attribute is empty"),
        ({**POLICY, "filter": {"colour": "red"}}, "colour"),
        ({**POLICY, "filter": {"reason": "bored"}}, "reason must be one of"),
        ({**POLICY, "interval": 59}, "interval must be an integer from 60 to 604800"),
        ({**POLICY, "interval": "10m"}, "interval must be an integer"),
        ({**POLICY, "max_rounds": 0}, "max_rounds must be an integer from 1 to 100"),
        ({**POLICY, "max_rounds": True}, "max_rounds must be an integer"),
        ({**POLICY, "canary": "x"}, "canary must be a number"),
        ({**POLICY, "watch": 30}, "watch is given with canary only"),
        ({**POLICY, "canary": 0}, "a canary takes 1 to"),
        ({**POLICY, "rate": -1}, "rate must be more than 0"),
        ({**POLICY, "enabled": "yes"}, "enabled must be true or false"),
        ({**POLICY, "seed": 4}, "seed"),
        ({**POLICY, "extra": 1}, "extra"),
    ],
)
def test_a_bad_policy_is_refused_before_anything_is_written(
    api: ApiClient, body: dict[str, Any], words: str
) -> None:
    with_dlq(api)
    r = api.put(AUTO, json=body)
    assert r.status_code == 400, r.text
    assert words in r.json()["description"]
    assert api.get(AUTO).status_code == 404


@pytest.mark.parametrize("key", filters.FILTER_KEYS)
def test_a_blank_field_of_the_filter_is_an_invalid_filter_as_on_every_route(
    api: ApiClient, key: str
) -> None:
    with_dlq(api)
    for value in (*BLANKS, None, []):
        r = api.put(AUTO, json={**POLICY, "filter": {key: value}})
        assert r.status_code == 400, (key, value, r.text)
        assert r.json()["title"] == "Invalid filter", (key, value, r.text)
        # a NUL is named as such, here as in every other filter
        words = "may not contain NUL" if "\x00" in (value or "") else "is empty"
        assert f"filter: {key} {words}" in r.json()["description"], (key, value, r.text)
    # the same title a blank value gets where the filter is a query
    r = api.get("/v2/queues/orders-dlq/dead_letters/count", params={key: " "})
    assert r.json()["title"] == "Invalid filter", r.text
    assert api.get(AUTO).status_code == 404


def test_the_filter_is_shown_as_given(api: ApiClient) -> None:
    with_dlq(api)
    where = {
        "source_queue": "orders",
        "older_than": "15m",
        "attribute": ["kind=a", "b"],
        "error_class": "KeyError",
        "since": "2027-01-01T00:00:00Z",
        "min_deaths": 2,
    }
    r = api.put(AUTO, json={**POLICY, "filter": where, "enabled": False})
    assert r.status_code == 201, r.text
    shown = r.json()
    assert shown["state"] == "stopped" and shown["next_round_at"] is None
    assert shown["filter"] == {**where, "older_than": 900.0, "since": "2027-01-01T00:00:00.000Z"}


def test_a_queue_that_is_no_dlq_takes_no_policy(api: ApiClient) -> None:
    make_queue(api, "plain")
    r = api.put("/v2/queues/plain/dead_letters/auto_redrive", json=POLICY)
    assert r.status_code == 400 and "not the dead-letter queue" in r.json()["description"]
