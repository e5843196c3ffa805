"""`POST /v2/queues/{dlq}/patterns/assignments`: a writer's micro-batch of pattern assignments
merged into the stored patterns in one transaction, once per (writer, batch), by any number
of writers at once, with the alerts a store of patterns raises."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from deadletter.api.app import build_app
from deadletter.client import ApiError, Client
from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from tests.api.zaqar.conftest import ApiClient, make_queue
from tests.auth.live import live_server, zaqar
from tests.engine.helpers import P
from tests.support.servers import serving

ROUTE = "/v2/queues/orders-dlq/patterns/assignments"


def batch(writer: str, n: int, *pairs: tuple[str, str], **fields: Any) -> dict[str, Any]:
    items = [{"message_id": m, "pattern_id": p, **fields} for m, p in pairs]
    return {"writer": writer, "batch": n, "assignments": items}


def stored(api: ApiClient) -> dict[str, dict[str, Any]]:
    r = api.get("/v2/queues/orders-dlq/patterns")
    assert r.status_code == 200, r.text
    return {p["id"]: p for p in r.json()["patterns"]}


def test_a_batch_merges_once_and_a_member_counts_once(api: ApiClient) -> None:
    # Given a pattern a batch analysis stored with two members
    make_queue(api, "orders-dlq")
    put = {"patterns": [{"id": "p-1", "template": "timeout <*>", "message_ids": ["m1", "m2"]}]}
    assert api.put("/v2/queues/orders-dlq/patterns", json=put).status_code == 204
    # When batch 0 assigns a new member, a known one and a new pattern
    at = "2026-11-22T15:04:05.000Z"
    body = batch("s", 0, ("m3", "p-1"), ("m1", "p-1"), ("m4", "p-2"))
    body["assignments"][2] |= {"template": "currency <*>", "dead_lettered_at": at}
    r = api.post(ROUTE, json=body)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "merged": True,
        "batch": 0,
        "patterns": 2,
        "alerts": [{"kind": "new", "pattern_id": "p-2"}],
    }
    # Then each pattern counts its distinct members, and knows when they died
    got = stored(api)
    assert (got["p-1"]["count"], got["p-1"]["message_ids"]) == (3, ["m1", "m2", "m3"])
    assert (got["p-2"]["count"], got["p-2"]["template"]) == (1, "currency <*>")
    assert got["p-2"]["first_seen"] == got["p-2"]["last_seen"] == at
    assert got["p-2"]["minute_counts"] == [["2026-11-22T15:04:00.000Z", 1]]
    # And batch 0 again (a replay after a restart) writes nothing, batch 1 merges
    again = api.post(ROUTE, json=batch("s", 0, ("m5", "p-1")))
    assert again.status_code == 200 and again.json()["merged"] is False
    assert stored(api) == got
    assert api.post(ROUTE, json=batch("s", 1, ("m5", "p-1"))).json()["merged"] is True
    # while another writer's batches are its own
    assert api.post(ROUTE, json=batch("other", 0, ("m6", "p-1"))).json()["merged"] is True
    assert stored(api)["p-1"]["count"] == 5


def test_a_batch_behind_the_writers_last_is_refused_not_skipped(api: ApiClient) -> None:
    # Given a writer that merged batch 5 (a query on a checkpoint since deleted)
    make_queue(api, "orders-dlq")
    assert api.post(ROUTE, json=batch("s", 5, ("m1", "p-1"))).status_code == 200
    # When a query on a fresh checkpoint sends batch 0 under the same writer id
    r = api.post(ROUTE, json=batch("s", 0, ("m2", "p-1")))
    # Then it is told, in Zaqar's form, and nothing is written
    assert r.status_code == 409 and r.json()["title"] == "Batch behind"
    assert "new writer id" in r.json()["description"]
    assert stored(api)["p-1"]["message_ids"] == ["m1"]


def test_a_stored_set_keeps_the_batches_merged(api: ApiClient) -> None:
    # A batch analysis replacing the patterns does not make a merged batch new again
    make_queue(api, "orders-dlq")
    assert api.post(ROUTE, json=batch("s", 3, ("m1", "p-1"))).status_code == 200
    put = {"patterns": [{"id": "p-9", "message_ids": ["m1"]}]}
    assert api.put("/v2/queues/orders-dlq/patterns", json=put).status_code == 204
    assert api.post(ROUTE, json=batch("s", 3, ("m2", "p-1"))).json()["merged"] is False
    assert list(stored(api)) == ["p-9"]


def test_merged_patterns_alert_as_stored_ones_do(api: ApiClient, clock: ManualClock) -> None:
    make_queue(api, "orders-dlq")
    now = clock.now()
    # A new pattern alerts once; a pattern whose rate went from 0.2 to 10.2 a minute jumps
    one = api.post(ROUTE, json=batch("s", 0, ("m0", "p-1"), dead_lettered_at=now))
    assert one.json()["alerts"] == [{"kind": "new", "pattern_id": "p-1"}]
    many = [(f"m{i}", "p-1") for i in range(1, 51)]
    jump = api.post(ROUTE, json=batch("s", 1, *many, dead_lettered_at=now))
    assert jump.json()["alerts"] == [{"kind": "rate_jump", "pattern_id": "p-1"}]
    got = stored(api)["p-1"]
    assert (got["count"], got["rate_per_minute"], got["alert"]["kind"]) == (51, 10.2, "rate_jump")
    metrics = api.get("/metrics").text
    assert 'deadletter_pattern_alerts_total{kind="new"} 1.0' in metrics
    assert 'deadletter_pattern_alerts_total{kind="rate_jump"} 1.0' in metrics


GOOD = {"message_id": "m1", "pattern_id": "p-1"}


@pytest.mark.parametrize(
    "body",
    [
        {"batch": 0, "assignments": [GOOD]},
        {"writer": "", "batch": 0, "assignments": [GOOD]},
        {"writer": "w" * 201, "batch": 0, "assignments": [GOOD]},
        {"writer": 7, "batch": 0, "assignments": [GOOD]},
        {"writer": "s", "batch": -1, "assignments": [GOOD]},
        {"writer": "s", "batch": True, "assignments": [GOOD]},
        {"writer": "s", "batch": 1.5, "assignments": [GOOD]},
        {"writer": "s", "batch": 2**63, "assignments": [GOOD]},
        {"writer": "s", "batch": 0, "assignments": []},
        {"writer": "s", "batch": 0, "assignments": [GOOD] * 10_001},
        {"writer": "s", "batch": 0, "assignments": [GOOD], "extra": 1},
        {"writer": "s", "batch": 0, "assignments": [{"message_id": "m1"}]},
        {"writer": "s", "batch": 0, "assignments": [{**GOOD, "pattern_id": ""}]},
        {"writer": "s", "batch": 0, "assignments": [{**GOOD, "message_id": "x" * 257}]},
        {"writer": "s", "batch": 0, "assignments": [{**GOOD, "template": 3}]},
        {"writer": "s", "batch": 0, "assignments": [{**GOOD, "template": "t" * 4097}]},
        {"writer": "s", "batch": 0, "assignments": [{**GOOD, "pattern_id": "p\x00"}]},
        {"writer": "s", "batch": 0, "assignments": [{**GOOD, "dead_lettered_at": "soon"}]},
        {"writer": "s", "batch": 0, "assignments": [{**GOOD, "dead_lettered_at": -5}]},
        {"writer": "s", "batch": 0, "assignments": [{**GOOD, "count": 3}]},
        {"writer": "s", "batch": 0, "assignments": ["m1"]},
        [GOOD],
    ],
)
def test_a_bad_batch_is_refused_in_zaqar_form_before_any_write(api: ApiClient, body: Any) -> None:
    make_queue(api, "orders-dlq")
    r = api.post(ROUTE, json=body)
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"title", "description"}
    assert stored(api) == {}
    # and the writer's batch 0 is still to merge
    assert api.post(ROUTE, json=batch("s", 0, ("m1", "p-1"))).json()["merged"] is True


def test_strict_json_and_the_queue_and_the_pattern_cap(api: ApiClient) -> None:
    make_queue(api, "orders-dlq")
    dup = b'{"writer": "s", "writer": "t", "batch": 0, "assignments": []}'
    r = api.post(ROUTE, content=dup, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and set(r.json()) == {"title", "description"}
    nan = b'{"writer": "s", "batch": NaN, "assignments": []}'
    assert api.post(ROUTE, content=nan).status_code == 400
    assert (
        api.post(ROUTE.replace("orders-dlq", "nope"), json=batch("s", 0, ("m", "p"))).status_code
        == 404
    )
    # the merged set may not pass the cap a stored set has
    many = [(f"m{i}", f"p-{i}") for i in range(1001)]
    r = api.post(ROUTE, json=batch("s", 0, *many))
    assert r.status_code == 400 and "1000 patterns" in r.json()["description"]
    assert stored(api) == {}


def test_merging_takes_the_role_that_stores_patterns(store: Store) -> None:
    with live_server(store) as live:
        admin, admin_secret = live.issue("alpha", "admin")
        a = f"{admin.key_id}:{admin_secret}"
        assert zaqar(live.url, "PUT", "/v2/queues/orders-dlq", token=a).status_code == 201
        body = batch("s", 0, ("m1", "p-1"))
        for role in ("reader", "producer", "consumer", "operator", "admin"):
            key, secret = live.issue("alpha", role)
            r = zaqar(live.url, "POST", ROUTE, token=f"{key.key_id}:{secret}", json=body)
            may = role in ("operator", "admin")
            assert r.status_code == (200 if may else 403), (role, r.text)
            if not may:
                assert set(r.json()) == {"title", "description"}
        assert zaqar(live.url, "POST", ROUTE, json=body).status_code == 401


WRITERS = 2
BATCHES = 15
PER_BATCH = 20


def test_writers_merging_at_once_lose_nothing(engine: Engine) -> None:
    # Given a DLQ and a real server over each store
    engine.create_queue(P, "orders-dlq")
    expected: dict[str, set[str]] = {}
    plans: list[list[list[dict[str, Any]]]] = []
    for w in range(WRITERS):
        plan = []
        for b in range(BATCHES):
            items = []
            for i in range(PER_BATCH):
                mid, pid = f"w{w}-b{b}-m{i}", f"p-{i % 4}"  # the writers share the patterns
                items.append({"message_id": mid, "pattern_id": pid})
                expected.setdefault(pid, set()).add(mid)
            plan.append(items)
        plans.append(plan)
    failures: list[BaseException] = []
    with serving(build_app(engine)) as url:

        def write(w: int) -> None:
            try:
                with Client(url, project=P) as client:
                    for b, items in enumerate(plans[w]):
                        client.merge_assignments("orders-dlq", f"writer-{w}", b, items)
                        # and each batch again, as Spark replays one after a restart
                        again = client.merge_assignments("orders-dlq", f"writer-{w}", b, items)
                        assert again["merged"] is False
            except BaseException as exc:  # surfaced below, from the test's thread
                failures.append(exc)

        # When two writers merge their batches at the same time
        threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with Client(url, project=P) as client, pytest.raises(ApiError) as behind:
            client.merge_assignments("orders-dlq", "writer-0", 0, plans[0][0])
    assert not failures, failures
    assert behind.value.status == 409
    # Then every assignment of both is stored, each once
    got = {p["id"]: p for p in engine.get_patterns(P, "orders-dlq")}
    assert {pid: set(p["message_ids"]) for pid, p in got.items()} == expected
    assert {pid: p["count"] for pid, p in got.items()} == {
        pid: len(m) for pid, m in expected.items()
    }
