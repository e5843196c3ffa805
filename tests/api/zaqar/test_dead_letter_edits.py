"""Edit and retry on the native API, both stores: a dead letter patched where it is (JSON Merge
Patch or JSON Patch), each change in its history with who and when and the original kept,
then redriven; a redrive's transform edits every letter it moves."""

from __future__ import annotations

from typing import Any

import pytest

from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient, post, with_dlq
from tests.api.zaqar.test_dead_letter_filters import DLQ, reject

MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}


def edit(api: ApiClient, mid: str, patch: Any, headers: dict[str, str] = MERGE,
         query: str = "") -> Any:  # fmt: skip
    r = api.patch(f"{DLQ}/dead_letters/{mid}{query}", json=patch, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def run(engine: Engine, task_id: str) -> None:
    while engine.redrive_step(task_id, 100).status.value == "RUNNING":
        pass


def back_in_orders(api: ApiClient) -> list[dict[str, Any]]:
    r = api.get("/v2/queues/orders/messages?include_claimed=true&echo=true")
    return list(r.json()["messages"])


def test_an_edited_dead_letter_keeps_its_original_and_each_change_then_is_redriven(
    api: ApiClient, engine: Engine
) -> None:
    # Given an order dead-lettered because it has no customer id
    with_dlq(api)
    mid = reject(api, {"customer": {"name": "Ada"}, "total": 5}, "KeyError: 'id'",
                 {"tenant": "acme"})  # fmt: skip
    # When it is patched twice: its body, then an attribute
    first = edit(api, mid, {"body": {"customer": {"id": "c-0"}}})["message"]
    assert first["body"] == {"customer": {"name": "Ada", "id": "c-0"}, "total": 5}
    second = edit(
        api, mid, {"attributes": {"tenant": None, "fixed": {"type": "String", "value": "yes"}}}
    )
    message = second["message"]
    # Then the dead letter is as patched, still where it was, its provenance untouched
    assert message["body"] == first["body"]
    assert set(message["attributes"]) == {"fixed", "DLQ.sourceQueue"}
    assert message["provenance"]["error"] == "KeyError: 'id'"
    # and its history keeps each edit, who made it and when; the first keeps the original
    edits = [e for e in message["history"] if e["event"] == "edited"]
    assert len(edits) == 2
    assert edits[0]["original"] == {
        "body": {"customer": {"name": "Ada"}, "total": 5},
        "attributes": {"tenant": {"type": "String", "value": "acme"}},
    }
    assert "original" not in edits[1]
    assert edits[0]["by"] == {"project": "123456789012", "credential": None}
    assert edits[0]["at"].endswith("Z")
    assert edits[1]["patch"] == {"type": "merge", "document": {"attributes": {
        "tenant": None, "fixed": {"type": "String", "value": "yes"}}}}  # fmt: skip
    # When it is redriven in the same request as one more edit
    done = edit(api, mid, {"body": {"total": 6}}, query="?redrive=true")
    assert done["redrive"]["to_move"] == 1
    run(engine, done["redrive"]["id"])
    # Then it is back in its queue as edited, its history with it
    (again,) = back_in_orders(api)
    assert again["body"] == {"customer": {"name": "Ada", "id": "c-0"}, "total": 6}
    assert [e["event"] for e in again["history"]] == [
        "dead_lettered", "edited", "edited", "edited", "redriven"
    ]  # fmt: skip


def test_a_json_patch_edits_and_its_failed_test_changes_nothing(api: ApiClient) -> None:
    with_dlq(api)
    mid = reject(api, {"items": [1, 2]}, "boom")
    ops = [{"op": "test", "path": "/body/items/0", "value": 1},
           {"op": "add", "path": "/body/items/-", "value": 3}]  # fmt: skip
    assert edit(api, mid, ops, JSON_PATCH)["message"]["body"] == {"items": [1, 2, 3]}
    # A test that fails is a conflict, and the letter stays as it was
    r = api.patch(f"{DLQ}/dead_letters/{mid}", headers=JSON_PATCH,
                  json=[{"op": "test", "path": "/body/items/0", "value": 9},
                        {"op": "remove", "path": "/body/items"}])  # fmt: skip
    assert r.status_code == 409 and r.json()["title"] == "Patch conflict", r.text
    (letter,) = api.get(f"{DLQ}/dead_letters").json()["messages"]
    assert letter["body"] == {"items": [1, 2, 3]}


@pytest.mark.one_store
@pytest.mark.parametrize(
    ("patch", "headers", "status", "words"),
    [
        ({"body": 1}, {"Content-Type": "application/json"}, 415, "merge-patch+json"),
        ({"id": "x"}, MERGE, 400, '"id"'),
        ({"attributes": {"DLQ.sourceQueue": None}}, MERGE, 400, "reserved"),
        ({"attributes": {"a": "plain"}}, MERGE, 400, "type"),
        ({"body": "x" * 300_000}, MERGE, 400, "exceeds"),
        ([{"op": "move"}], JSON_PATCH, 400, "JSON Patch"),
        ([{"op": "remove", "path": "/body/nothing"}], JSON_PATCH, 409, "does not apply"),
    ],
)
def test_an_edit_that_makes_no_message_is_refused_and_changes_nothing(
    api: ApiClient, patch: Any, headers: dict[str, str], status: int, words: str
) -> None:
    with_dlq(api)
    mid = reject(api, {"n": 1}, "boom")
    r = api.patch(f"{DLQ}/dead_letters/{mid}", json=patch, headers=headers)
    assert r.status_code == status, r.text
    assert words in r.json()["description"], r.text
    (letter,) = api.get(f"{DLQ}/dead_letters").json()["messages"]
    assert letter["body"] == {"n": 1}
    assert [e["event"] for e in letter["history"]] == ["dead_lettered"]


@pytest.mark.one_store
def test_only_a_dead_letter_of_the_queue_is_edited(api: ApiClient) -> None:
    with_dlq(api)
    (live,) = post(api, "orders", {"n": 1})
    r = api.patch(f"{DLQ}/dead_letters/{live}", json={"body": 2}, headers=MERGE)
    assert r.status_code == 404, r.text


def test_a_redrive_transform_edits_every_letter_it_moves(api: ApiClient, engine: Engine) -> None:
    # Given orders without a customer id, and one with
    with_dlq(api)
    for body in ({"total": 1}, {"customer": {}, "total": 2}, {"customer": {"id": 7}}):
        reject(api, body, "KeyError: 'id'")
    # When the ones without are redriven with a transform that gives them one
    r = api.post(f"{DLQ}/redrives", json={
        "body": "!(customer.id)", "transform": {"body": {"customer": {"id": "c-0"}}}})  # fmt: skip
    assert r.status_code == 201, r.text
    run(engine, r.json()["id"])
    # Then they are back, edited, each with the edit in its history naming the task
    bodies = sorted((m["body"]["total"], m["body"]["customer"]) for m in back_in_orders(api))
    assert bodies == [(1, {"id": "c-0"}), (2, {"id": "c-0"})]
    for m in back_in_orders(api):
        (edited,) = [e for e in m["history"] if e["event"] == "edited"]
        assert edited["task_id"] == r.json()["id"] and "original" in edited
    # and the one that had an id is still dead, untouched
    (kept,) = api.get(f"{DLQ}/dead_letters").json()["messages"]
    assert kept["body"] == {"customer": {"id": 7}}


def test_an_edit_whose_redrive_cannot_start_changes_nothing(api: ApiClient) -> None:
    # Given a redrive task running on the DLQ
    with_dlq(api)
    mid = reject(api, {"n": 1}, "boom")
    reject(api, {"n": 2}, "boom")
    assert api.post(f"{DLQ}/redrives", json={"rate": 0.001}).status_code == 201
    # an edit that would start another is refused whole: the letter is as it was
    r = api.patch(f"{DLQ}/dead_letters/{mid}?redrive=true", json={"body": 9}, headers=MERGE)
    assert r.status_code == 409, r.text
    letters = api.get(f"{DLQ}/dead_letters").json()["messages"]
    assert [m["body"] for m in letters] == [{"n": 1}, {"n": 2}]
