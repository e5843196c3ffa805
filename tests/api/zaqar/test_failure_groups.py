"""Failure groups through the native API: a saved filter used wherever a filter is; a group
archived, browsed in the archive, restored; discarded with a record; a retry followed on its
task. Every body is checked before anything is written."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient, claim, post, with_dlq

# The engine's behaviour is checked on both stores (tests/engine/test_failure_groups.py).
pytestmark = pytest.mark.one_store
DLQ = "/v2/queues/orders-dlq"


def reject(api: ApiClient, error_class: str, *bodies: Any) -> list[str]:
    ids = post(api, "orders", *bodies)
    cid, got = claim(api, "orders", limit=len(bodies))
    for m in got:
        r = api.post(f"/v2/queues/orders/messages/{m['id']}/dead_letter?claim_id={cid}",
                     json={"error": {"class": error_class, "message": "x"}})  # fmt: skip
        assert r.status_code == 200, r.text
    return ids


@pytest.fixture
def dlq(api: ApiClient) -> dict[str, list[str]]:
    """Given three timeouts and two key errors dead in orders-dlq, the timeouts saved as a
    filter."""
    with_dlq(api)
    ids = {"t": reject(api, "TimeoutError", 1, 2, 3), "k": reject(api, "KeyError", 4, 5)}
    r = api.put(f"{DLQ}/dead_letters/filters/timeouts", json={"error_class": "TimeoutError"})
    assert r.status_code == 201, r.text
    return ids


def count(api: ApiClient, **params: str) -> int:
    r = api.get(f"{DLQ}/dead_letters/count", params=params)
    assert r.status_code == 200, r.text
    return int(r.json()["count"])


def test_saved_filters_are_kept_listed_and_used_by_name(api: ApiClient, dlq: Any) -> None:
    r = api.get(f"{DLQ}/dead_letters/filters/timeouts")
    assert r.status_code == 200
    assert r.json()["filter"] == {"error_class": "TimeoutError"}
    # Replaced: 200
    r = api.put(f"{DLQ}/dead_letters/filters/timeouts",
                json={"error_class": "TimeoutError", "attribute": ["a"]})  # fmt: skip
    assert r.status_code == 200 and r.json()["filter"]["attribute"] == ["a"]
    api.put(f"{DLQ}/dead_letters/filters/timeouts", json={"error_class": "TimeoutError"})
    names = [f["name"] for f in api.get(f"{DLQ}/dead_letters/filters").json()["filters"]]
    assert names == ["timeouts"]
    assert count(api, filter="timeouts") == 3
    assert (
        len(api.get(f"{DLQ}/dead_letters", params={"filter": "timeouts"}).json()["messages"]) == 3
    )
    assert api.get(f"{DLQ}/dead_letters/count", params={"filter": "nope"}).status_code == 404
    assert api.delete(f"{DLQ}/dead_letters/filters/timeouts").status_code == 204
    assert api.delete(f"{DLQ}/dead_letters/filters/timeouts").status_code == 404


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({}, "selects something"),
        ({"error_class": ""}, "error_class is empty"),
        ({"attribute": []}, "attribute is empty"),
        ({"error_class": None}, "error_class is empty"),
        ({"colour": "red"}, "Unknown field"),
        ({"filter": "other"}, "Unknown field"),
        ({"older_than": "soon"}, "older_than must be a duration"),
        ({"pattern_id": "p-none"}, "No stored pattern"),
    ],
)
def test_a_saved_filter_is_checked_before_it_is_kept(
    api: ApiClient, dlq: Any, body: dict[str, Any], words: str
) -> None:
    r = api.put(f"{DLQ}/dead_letters/filters/other", json=body)
    assert r.status_code in (400, 404), r.text
    assert words in r.text
    assert api.get(f"{DLQ}/dead_letters/filters/other").status_code == 404


def test_a_group_is_archived_browsed_and_restored(
    api: ApiClient, dlq: dict[str, list[str]], engine: Engine
) -> None:
    r = api.post(f"{DLQ}/dead_letters/archive", json={"filter": "timeouts", "dry_run": True})
    assert r.json() == {"dry_run": True, "to_archive": 3}
    r = api.post(f"{DLQ}/dead_letters/archive", json={"filter": "timeouts", "retention": 600})
    assert r.status_code == 200 and r.json() == {"archived": 3}
    # The active view no longer holds it; the archive does, with when each goes
    assert count(api) == 2
    assert api.get("/v2/queues/orders-dlq/stats").json()["messages"]["total"] == 2
    assert count(api, archived="true") == 3
    page = api.get(f"{DLQ}/dead_letters", params={"archived": "true", "limit": "2"}).json()
    assert len(page["messages"]) == 2 and page["links"]
    assert {"at", "keep_until"} <= set(page["messages"][0]["archived"])
    assert page["messages"][0]["history"][-1]["event"] == "archived"
    rest = api.get(page["links"][0]["href"]).json()["messages"]
    assert {m["id"] for m in page["messages"] + rest} == set(dlq["t"])
    # Restored, one by its id, then the rest
    r = api.post(f"{DLQ}/dead_letters/restore", json={"message_ids": [dlq["t"][0]]})
    assert r.json() == {"restored": 1}
    r = api.post(f"{DLQ}/dead_letters/restore", json={"filter": "timeouts", "dry_run": True})
    assert r.json() == {"dry_run": True, "to_restore": 2}
    assert api.post(f"{DLQ}/dead_letters/restore", json={}).json() == {"restored": 2}
    assert count(api) == 5 and count(api, archived="true") == 0


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({}, 400),  # a selection is required
        ({"filter": "timeouts", "retention": 59}, 400),
        ({"filter": "timeouts", "retention": 366 * 86_400 + 1}, 400),
        ({"filter": "timeouts", "retention": "600"}, 400),
        ({"filter": "timeouts", "dry_run": "yes"}, 400),
        ({"filter": "timeouts", "keep": 600}, 400),
        ({"filter": "nope"}, 404),
        ({"reason": ""}, 400),
        ({"message_ids": []}, 400),
        ({"message_ids": "x"}, 400),
    ],
)
def test_an_archive_is_checked_before_anything_moves(
    api: ApiClient, dlq: Any, body: dict[str, Any], status: int
) -> None:
    r = api.post(f"{DLQ}/dead_letters/archive", json=body)
    assert r.status_code == status, r.text
    assert count(api) == 5


def test_a_discard_needs_a_why_and_is_recorded(api: ApiClient, dlq: dict[str, list[str]]) -> None:
    r = api.post(f"{DLQ}/dead_letters/discard", json={"filter": "timeouts"})
    assert r.status_code == 400 and "why" in r.text
    r = api.post(f"{DLQ}/dead_letters/discard", json={"filter": "timeouts", "why": " "})
    assert r.status_code == 400
    r = api.post(f"{DLQ}/dead_letters/discard",
                 json={"filter": "timeouts", "why": "outage", "dry_run": True})  # fmt: skip
    assert r.json() == {"dry_run": True, "to_discard": 3}
    assert api.get(f"{DLQ}/dead_letters/discards").json()["discards"] == []
    body = {"filter": "timeouts", "reason": "rejected", "why": "known outage"}
    r = api.post(f"{DLQ}/dead_letters/discard", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["discarded"] == 3
    (record,) = api.get(f"{DLQ}/dead_letters/discards").json()["discards"]
    assert record == r.json()["record"]
    assert record["kind"] == "discarded" and record["why"] == "known outage"
    assert record["selection"] == {"reason": "rejected", "filter": "timeouts"}
    assert sorted(record["sample_ids"]) == sorted(dlq["t"])
    assert count(api) == 2


def test_an_ended_archive_is_in_the_discard_log(
    api: ApiClient, dlq: Any, engine: Engine, clock: ManualClock
) -> None:
    api.post(f"{DLQ}/dead_letters/archive", json={"error_class": "KeyError", "retention": 60})
    clock.advance(61)
    assert engine.sweep_archives() == 2
    (record,) = api.get(f"{DLQ}/dead_letters/discards").json()["discards"]
    assert (record["kind"], record["count"], record["by"]) == ("archive_expired", 2, None)


def test_a_retried_group_is_followed_on_its_task(api: ApiClient, dlq: Any, engine: Engine) -> None:
    r = api.post(f"{DLQ}/redrives", json={"filter": "timeouts"})
    assert r.status_code == 201, r.text
    task = r.json()
    assert task["filter"]["filter"] == "timeouts" and task["to_move"] == 3
    while engine.redrive_step(task["id"], 100).status.value == "RUNNING":
        pass
    cid, got = claim(api, "orders", limit=1)
    api.post(f"/v2/queues/orders/messages/{got[0]['id']}/dead_letter?claim_id={cid}", json={})
    r = api.get(f"{DLQ}/redrives/{task['id']}")
    assert r.json()["follow"] == {"redriven": 3, "came_back_dead": 1, "still_out": 2}


def test_archives_restores_and_discards_are_counted_in_the_metrics(
    api: ApiClient, dlq: dict[str, list[str]]
) -> None:
    def triaged() -> dict[str, float]:
        text = api.get("/metrics").text
        found = re.findall(
            r'deadletter_dead_letters_triaged_total\{action="(\w+)",dlq="orders-dlq",'
            r'project="[^"]*"\} ([\d.]+)',
            text,
        )
        return {action: float(n) for action, n in found}

    api.post(f"{DLQ}/dead_letters/archive", json={"filter": "timeouts"})
    api.post(f"{DLQ}/dead_letters/restore", json={"error_class": "TimeoutError"})
    r = api.post(f"{DLQ}/dead_letters/discard", json={"error_class": "KeyError", "why": "fixed"})
    assert r.status_code == 200, r.text
    assert triaged() == {"archived": 3, "restored": 3, "discarded": 2}
