"""Through the Zaqar face: a redrive reports skipped messages instead of failing, stranded
dead letters can go to a named queue, eligibility drops are counted, and a nack at the limit
moves at once."""

from __future__ import annotations

from typing import Any

from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient, claim, make_queue, post, with_dlq

P = "123456789012"


def _run(api: ApiClient, engine: Engine, href: str) -> dict[str, Any]:
    task_id = href.rsplit("/", 1)[1]
    while engine.redrive_step(task_id, 1).status.value == "RUNNING":
        pass
    task: dict[str, Any] = api.get(href).json()
    return task


def _kill(api: ApiClient, queue: str, *bodies: Any) -> None:
    """Dead-letter each (max claim count 1): claim, then release at the limit."""
    post(api, queue, *bodies)
    claim_id, _ = claim(api, queue, limit=20)
    assert api.delete(f"/v2/queues/{queue}/claims/{claim_id}").status_code == 204


def test_a_redrive_skips_what_it_cannot_send_back(api: ApiClient, engine: Engine) -> None:
    with_dlq(api, "s", "d", n=1)
    (direct,) = post(api, "d", "straight in")
    _kill(api, "s", "s1", "s2")
    r = api.post("/v2/queues/d/redrives", json={})
    assert r.status_code == 201, r.text
    done = _run(api, engine, r.headers["Location"])
    assert (done["status"], done["moved"], done["skipped"]) == ("COMPLETED", 2, 1)
    assert done["skipped_messages"] == [{"id": direct, "reason": "no_source"}]
    assert done["failure_reason"] is None
    listed = api.get("/v2/queues/d/messages?echo=true").json()["messages"]
    assert [m["id"] for m in listed] == [direct]


def test_a_redrive_names_each_reason_it_skipped_a_dead_letter_for(
    api: ApiClient, engine: Engine
) -> None:
    # Given a DLQ holding one dead letter of each kind that cannot go back:
    with_dlq(api, "gone", "d", n=1)
    for source in ("now-a-dlq", "fine"):
        make_queue(api, source, _max_claim_count=1, _dead_letter_queue="d")
    (direct,) = post(api, "d", "sent straight to the DLQ")  # no source at all
    _kill(api, "gone", "g")
    _kill(api, "now-a-dlq", "n")
    _kill(api, "fine", "f")
    assert api.delete("/v2/queues/gone").status_code == 204  # its source deleted
    # its source has since become a DLQ itself (a redrive there would start a chain)
    engine.update_queue(P, "now-a-dlq", settings=QueueSettings())
    engine.create_queue(
        P, "x", settings=QueueSettings(dead_letter=DeadLetterPolicy("now-a-dlq", 3))
    )
    by_body = {m["body"]: m["id"] for m in api.get("/v2/queues/d/dead_letters").json()["messages"]}
    # When everything is redriven,
    done = _run(api, engine, api.post("/v2/queues/d/redrives", json={}).headers["Location"])
    # only the one with a live source goes back, and each other says why it stayed.
    assert (done["status"], done["moved"], done["skipped"]) == ("COMPLETED", 1, 3)
    assert sorted(done["skipped_messages"], key=lambda s: s["reason"]) == [
        {"id": direct, "reason": "no_source"},
        {"id": by_body["g"], "reason": "source_deleted"},
        {"id": by_body["n"], "reason": "source_is_dlq"},
    ]
    assert [m["body"] for m in claim(api, "fine")[1]] == ["f"]
    left = {m["id"] for m in api.get("/v2/queues/d/messages?echo=true").json()["messages"]}
    assert left == {direct, by_body["g"], by_body["n"]}


def test_stranded_dead_letters_go_to_a_named_queue(api: ApiClient, engine: Engine) -> None:
    with_dlq(api, "s", "d", n=1)
    _kill(api, "s", "s1")
    assert api.delete("/v2/queues/s").status_code == 204
    make_queue(api, "other")
    r = api.post("/v2/queues/d/redrives", json={"destination": "other"})
    assert r.status_code == 201, r.text
    assert _run(api, engine, r.headers["Location"])["moved"] == 1
    assert [m["body"] for m in claim(api, "other")[1]] == ["s1"]


def test_eligibility_drops_show_in_stats(api: ApiClient) -> None:
    with_dlq(api, "s", "d", n=1)
    post(api, "s", "keep")
    post(api, "s", "drop", dead_letter_eligible=False)
    claim_id, _ = claim(api, "s")
    api.delete(f"/v2/queues/s/claims/{claim_id}")
    stats = api.get("/v2/queues/s/stats").json()
    assert stats["dead_letter"]["dropped"] == {"max_claims": 1}
    assert stats["dead_letter"]["dead_lettered"] == {"max_claims": 1}
    assert stats["messages"]["total"] == 0


def test_dead_letters_archived_while_a_redrive_runs_are_counted_as_gone(
    api: ApiClient, engine: Engine
) -> None:
    # Given a redrive of three dead letters that has moved the first
    with_dlq(api, "s", "d", n=1)
    _kill(api, "s", "s1", "s2", "s3")
    r = api.post("/v2/queues/d/redrives", json={})
    href = r.headers["Location"]
    engine.redrive_step(href.rsplit("/", 1)[1], 1)
    # When the other two are archived before it reaches them
    rest = [m["id"] for m in api.get("/v2/queues/d/messages?echo=true").json()["messages"]]
    r = api.post("/v2/queues/d/dead_letters/archive", json={"message_ids": rest})
    assert r.status_code == 200, r.text
    # I expect the task to say where they went
    done = _run(api, engine, href)
    assert (done["status"], done["to_move"], done["moved"]) == ("COMPLETED", 3, 1)
    assert (done["skipped"], done["gone"]) == (0, 2)
