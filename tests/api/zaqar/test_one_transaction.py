"""A post to an existing queue checks its messages against the queue's settings in the send's
own transaction: one store transaction per post, none to read the queue first."""

from __future__ import annotations

from tests.api.zaqar.conftest import ApiClient, make_queue


def test_a_post_to_an_existing_queue_runs_one_transaction(
    api: ApiClient, counted: list[str]
) -> None:
    make_queue(api, "one-tx", _max_messages_post_size=2048, _min_message_ttl=120)
    counted.clear()
    r = api.post("/v2/queues/one-tx/messages", json={"messages": [{"body": 1}, {"body": 2}]})
    assert r.status_code == 201, r.text
    assert counted == ["write"]
    # and the queue's own limits, read in that transaction, still apply
    counted.clear()
    r = api.post("/v2/queues/one-tx/messages", json={"messages": [{"body": "x" * 3000}]})
    assert r.status_code == 400 and "larger than 2048 bytes" in r.json()["description"]
    r = api.post("/v2/queues/one-tx/messages", json={"messages": [{"body": 1, "ttl": 60}]})
    assert r.status_code == 400 and "ttl" in r.json()["description"]
    assert counted == ["write", "write"]  # refused inside the send, nothing written
    assert api.get("/v2/queues/one-tx/stats").json()["messages"]["total"] == 2


def test_a_first_post_still_creates_its_queue(api: ApiClient) -> None:
    r = api.post("/v2/queues/made-by-post/messages", json={"messages": [{"body": 1}]})
    assert r.status_code == 201, r.text
    assert api.get("/v2/queues/made-by-post/stats").json()["messages"]["total"] == 1
