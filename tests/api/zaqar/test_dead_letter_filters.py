"""The dead-letter filter language on the native API, both stores: each name selects what it
says on browse, count, purge and redrive alike; a bad value is a 400 naming it."""

from __future__ import annotations

from typing import Any

import pytest

from deadletter.clock import ManualClock
from deadletter.engine import selection
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient, claim, post, with_dlq

DLQ = "/v2/queues/orders-dlq"


def reject(api: ApiClient, body: Any, error: Any, attributes: dict[str, str] | None = None,
           description: str | None = None) -> str:  # fmt: skip
    """Send `body` to orders, claim it and dead-letter it with `error`; its id."""
    typed = {k: {"type": "String", "value": v} for k, v in (attributes or {}).items()}
    (mid,) = post(api, "orders", body, **({"attributes": typed} if typed else {}))
    cid, got = claim(api, "orders", limit=1)
    assert [m["id"] for m in got] == [mid]
    doc = {"error": error, **({"description": description} if description else {})}
    r = api.post(f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={cid}", json=doc)
    assert r.status_code == 200, r.text
    return mid


@pytest.fixture
def letters(api: ApiClient, clock: ManualClock) -> dict[str, str]:
    """Given four dead letters of orders, an hour apart, each failing its own way."""
    with_dlq(api)
    ids = {}
    ids["a"] = reject(api, {"customer": {"id": 1}, "total": 5},
                      {"class": "KeyError", "message": "'sku'"}, {"tenant": "acme"})  # fmt: skip
    clock.advance(3600)
    ids["b"] = reject(api, {"customer": {}, "total": -3}, "ValueError: total=-3",
                      {"tenant": "other"})  # fmt: skip
    clock.advance(3600)
    ids["c"] = reject(api, {"customer": {"id": 2}, "total": 9},
                      {"class": "app.errors.Timeout", "message": "timeout after 30000 ms",
                       "stack": "Traceback ...\n  File \"pay.py\", line 7"})  # fmt: skip
    clock.advance(3600)
    ids["d"] = reject(api, {"total": 1}, "customer missing", description="no customer")
    return ids


def params(query: str) -> list[tuple[str, str]]:
    """`query` as written in CASES (`name=value&...`, a value taken as it reads)."""
    pairs = [part.partition("=") for part in query.split("&") if part]
    return [(name, value) for name, _, value in pairs]


def selected(api: ApiClient, query: str) -> set[str]:
    r = api.get(f"{DLQ}/dead_letters", params=params(query))
    assert r.status_code == 200, r.text
    return {m["id"] for m in r.json()["messages"]}


# Each query of the language and the letters it selects (by their fixture names).
CASES = [
    ("", "abcd"),
    ("reason=rejected&source_queue=orders", "abcd"),
    ("error_class=KeyError", "a"),
    ("error_class=ValueError", "b"),  # named by a text error's last line
    ("error_class=Timeout", "c"),  # by its last dotted part
    ("error_class=app.errors.Timeout", "c"),
    ("error_contains=total=", "b"),
    ("error_contains=pay.py", "c"),  # the stack is part of the error's text
    ("error_contains=no customer", "d"),  # and so is the consumer's description
    ("error_matches=timeout after [0-9]+ ms", "c"),
    ("error_matches=^(KeyError|ValueError)", "b"),
    ("attribute=tenant=acme", "a"),
    ("attribute=tenant", "ab"),
    ("attribute=tenant&attribute=tenant=other", "b"),
    ("body=customer.id", "ac"),
    ("body=!(customer.id)", "bd"),  # `!customer.id` would be (!customer).id
    ("body=total < `0`", "b"),
    ("older_than=100m", "ab"),  # a died three hours ago, b two, c one, d now
    ("older_than=2h", "a"),  # strictly older
    ("newer_than=90m", "cd"),
    ("older_than=30m&newer_than=150m", "bc"),
    ("min_deaths=1&max_deaths=1", "abcd"),
    ("min_deaths=2", ""),
    ("error_class=KeyError&attribute=tenant=other", ""),
]


def test_each_filter_selects_the_same_dead_letters_on_browse_and_count(
    api: ApiClient, letters: dict[str, str]
) -> None:
    for query, names in CASES:
        # When the filter browses the DLQ, it lists exactly those letters
        want = {letters[n] for n in names}
        assert selected(api, query) == want, query
        # and its preview counts as many
        r = api.get(f"{DLQ}/dead_letters/count", params=params(query))
        assert r.status_code == 200, r.text
        assert r.json() == {"count": len(want)}, query


def test_a_filtered_browse_pages_through_what_it_selects(
    api: ApiClient, letters: dict[str, str]
) -> None:
    # Given a filter the engine evaluates, one letter a page
    r = api.get(f"{DLQ}/dead_letters?attribute=tenant&limit=1")
    (first,) = r.json()["messages"]
    (link,) = r.json()["links"]
    # the next page goes on after it with the same filter
    r = api.get(link["href"])
    assert [m["id"] for m in r.json()["messages"]] == [letters["b"]]
    assert first["id"] == letters["a"]


def test_a_purge_deletes_what_its_filter_selects_and_takes_a_filter(
    api: ApiClient, letters: dict[str, str]
) -> None:
    r = api.delete(f"{DLQ}/dead_letters?body=customer.id")
    assert r.status_code == 200, r.text
    assert r.json() == {"purged": 2}
    assert selected(api, "") == {letters["b"], letters["d"]}
    # A purge without a filter would empty the DLQ: refused, nothing deleted
    r = api.delete(f"{DLQ}/dead_letters")
    assert r.status_code == 400 and "filter" in r.json()["description"]
    assert api.get(f"{DLQ}/stats").json()["messages"]["total"] == 2


def test_a_redrive_moves_what_its_filter_selects_and_previews_it(
    api: ApiClient, engine: Engine, letters: dict[str, str]
) -> None:
    # A dry run counts what the task would select, and starts none
    r = api.post(f"{DLQ}/redrives", json={"attribute": ["tenant"], "dry_run": True})
    assert r.status_code == 200 and r.json() == {"dry_run": True, "to_move": 2}
    assert api.get(f"{DLQ}/redrives").json()["redrives"] == []
    # The task itself moves those only, reading past the others
    r = api.post(f"{DLQ}/redrives", json={"attribute": "tenant", "error_class": "KeyError"})
    assert r.status_code == 201, r.text
    task = r.json()
    assert task["to_move"] == 1
    while engine.redrive_step(task["id"], 1).status.value == "RUNNING":
        pass
    done = api.get(f"{DLQ}/redrives/{task['id']}").json()
    assert (done["status"], done["moved"], done["skipped"]) == ("COMPLETED", 1, 0)
    back = api.get("/v2/queues/orders/messages?include_claimed=true&echo=true").json()["messages"]
    assert [m["body"] for m in back] == [{"customer": {"id": 1}, "total": 5}]
    assert selected(api, "") == {letters["b"], letters["c"], letters["d"]}


@pytest.mark.one_store
@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("reason=bogus", "reason"),
        ("since=yesterday", "since"),
        ("older_than=soon", "older_than"),
        ("min_deaths=-1", "min_deaths"),
        ("min_deaths=3&max_deaths=2", "min_deaths"),
        ("body=customer.[", "body"),
        ("error_matches=(unclosed", "error_matches"),
        ("error_class=A&error_class=B", "error_class"),
        ("attribute==x", "attribute"),
        ("error_contains=" + "x" * 1025, "error_contains"),
    ],
)
def test_a_bad_filter_is_refused_naming_it_on_every_route(
    api: ApiClient, query: str, named: str
) -> None:
    with_dlq(api)
    for method, path in (("GET", "/dead_letters"), ("GET", "/dead_letters/count"),
                         ("DELETE", "/dead_letters")):  # fmt: skip
        r = api.request(method, f"{DLQ}{path}?{query}")
        assert r.status_code == 400, (path, r.text)
        assert r.json()["title"] == "Invalid filter"
        assert named in r.json()["description"], r.text


@pytest.mark.one_store
def test_a_regular_expression_that_backtracks_is_refused_not_run_for_ever(
    api: ApiClient,
) -> None:
    # Given a dead letter whose error text makes (a|aa)+$ backtrack exponentially
    with_dlq(api)
    reject(api, {"n": 1}, "a" * 64 + "!")
    # the browse is refused within the match's time limit, saying why
    r = api.get(f"{DLQ}/dead_letters", params={"error_matches": "(a|aa)+$"})
    assert r.status_code == 400, r.text
    assert "error_matches took more than" in r.json()["description"]


def test_a_redrive_reads_past_pages_its_filter_selects_nothing_of(
    api: ApiClient, engine: Engine, letters: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given pages of two dead letters, the first selecting none of what the filter wants
    monkeypatch.setattr(selection, "SCAN", 2)
    assert selected(api, "error_contains=no customer") == {letters["d"]}
    r = api.post(f"{DLQ}/redrives", json={"error_contains": "no customer"})
    assert r.json()["to_move"] == 1
    # When the task steps, a page without a match moves nothing and the task goes on
    task = engine.redrive_step(r.json()["id"], 1)
    assert (task.status.value, task.moved) == ("RUNNING", 0)
    while task.status.value == "RUNNING":
        task = engine.redrive_step(task.id, 1)
    # Then it moved the one it selected, from the second page
    assert (task.status.value, task.moved) == ("COMPLETED", 1)
    assert selected(api, "") == {letters["a"], letters["b"], letters["c"]}


def test_a_retried_group_is_followed_by_the_task_that_sent_it_back(
    api: ApiClient, engine: Engine, letters: dict[str, str]
) -> None:
    # Given the KeyError and the ValueError redriven by one task
    r = api.post(f"{DLQ}/redrives", json={"error_matches": "^(KeyError|ValueError)|'sku'"})
    task = r.json()["id"]
    assert r.json()["to_move"] == 2
    while engine.redrive_step(task, 10).status.value == "RUNNING":
        pass
    # When one of them fails again
    cid, (again, _) = claim(api, "orders", limit=2)
    r = api.post(f"/v2/queues/orders/messages/{again['id']}/dead_letter?claim_id={cid}",
                 json={"error": "KeyError: 'sku'"})  # fmt: skip
    assert r.status_code == 200, r.text
    # Then the task's group is followed: one of its two came back dead
    assert api.get(f"{DLQ}/dead_letters/count", params={"redriven_by": task}).json() == {"count": 1}
    assert selected(api, f"redriven_by={task}") == {again["id"]}
    assert selected(api, "redriven_by=another-task") == set()


def test_a_canary_samples_only_what_the_filter_selects(
    api: ApiClient, engine: Engine, clock: ManualClock, letters: dict[str, str]
) -> None:
    # Given a redrive of the letters without a customer id, with a canary of one
    r = api.post(f"{DLQ}/redrives", json={"body": "!(customer.id)", "canary": 1, "watch": 1})
    assert r.status_code == 201, r.text
    task = engine.redrive_step(r.json()["id"], 10)
    # When the sample has moved and its watch is over, the rest follows
    clock.advance(2)
    while task.status.value == "RUNNING":
        task = engine.redrive_step(task.id, 10)
        clock.advance(2)
    # Then exactly the two it selected moved, the sample among them
    assert (task.status.value, task.moved) == ("COMPLETED", 2)
    assert task.canary is not None and task.canary.sample == 1
    assert selected(api, "") == {letters["a"], letters["c"]}
