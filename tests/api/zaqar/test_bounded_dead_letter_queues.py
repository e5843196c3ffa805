"""Bounded DLQs and redrives into bounded queues on the Zaqar face: a drop-head DLQ drops its
oldest (counted in stats and /metrics), a full reject-publish DLQ refuses a consumer's
dead-lettering with 409 and the message stays held, and a redrive task moves only what fits,
recording the rest as skipped with reason `queue_full`."""

from __future__ import annotations

from typing import Any

from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient, claim, make_queue, post


def _kill(api: ApiClient, queue: str, *bodies: Any) -> None:
    """Dead-letter each (max claim count 1): claim, then release at the limit."""
    post(api, queue, *bodies)
    claim_id, _ = claim(api, queue, limit=20)
    assert api.delete(f"/v2/queues/{queue}/claims/{claim_id}").status_code == 204


def _dropped_maxlen(api: ApiClient) -> dict[str, str]:
    return {
        line.split('queue="', 1)[1].split('"', 1)[0]: line.rsplit(" ", 1)[1]
        for line in api.get("/metrics").text.splitlines()
        if line.startswith("deadletter_messages_dropped_total{") and 'reason="maxlen"' in line
    }


def test_a_drop_head_dlq_drops_its_oldest_and_counts_them(api: ApiClient) -> None:
    make_queue(api, "d", _max_messages=1)
    make_queue(api, "s", _max_claim_count=1, _dead_letter_queue="d")
    _kill(api, "s", "a", "b")
    (letter,) = api.get("/v2/queues/d/dead_letters").json()["messages"]
    assert letter["body"] == "b"
    stats = api.get("/v2/queues/d/stats").json()
    assert stats["dead_letter"]["dropped"] == {"maxlen": 1}
    assert _dropped_maxlen(api) == {"d": "1.0"}


def test_a_full_dlq_refuses_a_rejection_with_409(api: ApiClient) -> None:
    make_queue(api, "d", _max_messages=1, _overflow="reject-publish")
    make_queue(api, "s", _max_claim_count=5, _dead_letter_queue="d")
    post(api, "d", "filler")
    post(api, "s", "m")
    claim_id, (held,) = claim(api, "s")
    mid = held["id"]
    r = api.post(f"/v2/queues/s/messages/{mid}/dead_letter?claim_id={claim_id}", json={})
    assert r.status_code == 409, r.text
    assert r.json()["title"] == "Dead-letter queue is full"
    # still held by its claim: the consumer may acknowledge it
    assert api.delete(f"/v2/queues/s/messages/{mid}?claim_id={claim_id}").status_code == 204


def test_a_full_dlq_keeps_a_spent_message_and_stats_say_so(api: ApiClient) -> None:
    make_queue(api, "d", _max_messages=1, _overflow="reject-publish")
    make_queue(api, "s", _max_claim_count=1, _dead_letter_queue="d")
    _kill(api, "s", "a", "b")
    stats = api.get("/v2/queues/s/stats").json()
    assert stats["messages"]["total"] == 1
    assert stats["dead_letter"]["dlq_full"] == {"max_claims": 1}


def test_a_redrive_task_moves_what_fits_and_skips_the_rest(api: ApiClient, engine: Engine) -> None:
    make_queue(api, "d")
    make_queue(api, "s", _max_claim_count=1, _dead_letter_queue="d")
    _kill(api, "s", "a", "b", "c")
    r = api.patch(
        "/v2/queues/s",
        json=[{"op": "add", "path": "/metadata/_max_messages", "value": 1}],
        headers={"Content-Type": "application/openstack-messaging-v2.0-json-patch"},
    )
    assert r.status_code == 200, r.text
    r = api.post("/v2/queues/d/redrives", json={})
    assert r.status_code == 201, r.text
    href = r.headers["Location"]
    task_id = href.rsplit("/", 1)[1]
    while engine.redrive_step(task_id, 10).status.value == "RUNNING":
        pass
    done = api.get(href).json()
    assert (done["status"], done["moved"], done["skipped"]) == ("COMPLETED", 1, 2)
    assert {s["reason"] for s in done["skipped_messages"]} == {"queue_full"}
    remaining = api.get("/v2/queues/d/dead_letters").json()["messages"]
    assert [m["body"] for m in remaining] == ["b", "c"]
