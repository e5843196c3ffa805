"""The Zaqar face of Solace's model: the templates resource, the default DLQ opt-in
(`_dead_letter_default`), and the TTL keys (`_respect_ttl`, `_min_message_ttl`)."""

from __future__ import annotations

import pytest

from deadletter.domain import settings as declared
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import PATCH_TYPE, ApiClient, claim, make_queue, post

DEFAULT = "_dead_msg_queue"


def patch(api: ApiClient, queue: str, *ops: dict[str, object]) -> dict[str, object]:
    r = api.patch(f"/v2/queues/{queue}", json=list(ops), headers={"Content-Type": PATCH_TYPE})
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_templates_are_created_listed_changed_and_deleted(api: ApiClient) -> None:
    r = api.put("/v2/templates/orders", json={"pattern": "orders-*", "max_claims": 3})
    assert r.status_code == 201, r.text
    assert r.json()["max_claims"] == 3 and r.json()["dlq"] is None
    again = api.put("/v2/templates/orders", json={"pattern": "orders-*", "default_ttl": 120})
    assert again.status_code == 200 and again.json()["max_claims"] is None  # replaced whole
    changed = api.patch("/v2/templates/orders", json={"max_ttl": 600, "default_ttl": None})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["max_ttl"], changed.json()["default_ttl"]) == (600, None)
    assert [t["name"] for t in api.get("/v2/templates").json()["templates"]] == ["orders"]
    assert api.get("/v2/templates/orders").json()["pattern"] == "orders-*"
    assert api.delete("/v2/templates/orders").status_code == 204
    assert api.get("/v2/templates/orders").status_code == 404


def test_template_documents_are_checked(api: ApiClient) -> None:
    for doc, words in [
        ({"max_claims": 3}, "pattern"),
        ({"pattern": "*", "max_claims": "3"}, "integer"),
        ({"pattern": "*", "respect_ttl": 1}, "true or false"),
        ({"pattern": "*", "colour": "red"}, "Unknown"),
        ({"pattern": "*", "dlq": "d"}, "max claims"),
    ]:
        r = api.put("/v2/templates/t", json=doc)
        assert r.status_code == 400 and words in r.json()["description"], (doc, r.text)
    assert api.get("/v2/templates").json()["templates"] == []


def test_a_first_message_creates_its_queue_from_the_template(api: ApiClient) -> None:
    make_queue(api, "orders-dlq")
    api.put("/v2/templates/orders", json={"pattern": "orders-*", "max_claims": 2,
                                          "dlq": "orders-dlq"})  # fmt: skip
    r = api.post("/v2/queues/orders-eu/messages", json={"messages": [{"body": 1}]})
    assert r.status_code == 201, r.text
    meta = api.get("/v2/queues/orders-eu").json()
    assert (meta["_max_claim_count"], meta["_dead_letter_queue"]) == (2, "orders-dlq")
    # A PUT with metadata keeps what it states and takes the rest from the template.
    make_queue(api, "orders-us", _default_message_ttl=120)
    meta = api.get("/v2/queues/orders-us").json()
    assert (meta["_default_message_ttl"], meta["_dead_letter_queue"]) == (120, "orders-dlq")


def test_the_default_dlq_is_opt_in_and_removing_a_named_dlq_goes_back_to_it(
    api: ApiClient,
) -> None:
    # Max claims alone is still refused,
    r = api.put("/v2/queues/jobs", json={"_max_claim_count": 2})
    assert r.status_code == 400 and "_dead_letter_default" in r.json()["description"]
    assert api.get(f"/v2/queues/{DEFAULT}").status_code == 404
    # with the opt-in it dead-letters to the default DLQ, created for it,
    make_queue(api, "jobs", _max_claim_count=2, _dead_letter_default=True)
    meta = api.get("/v2/queues/jobs").json()
    assert (meta["_dead_letter_queue"], meta["_dead_letter_default"]) == (DEFAULT, True)
    assert api.get(f"/v2/queues/{DEFAULT}").status_code == 200
    # a named DLQ replaces it, and removing the name goes back to the default.
    make_queue(api, "jobs-dlq")
    named = patch(api, "jobs", {"op": "add", "path": "/metadata/_dead_letter_queue",
                                "value": "jobs-dlq"})  # fmt: skip
    assert named["_dead_letter_queue"] == "jobs-dlq"
    back = patch(api, "jobs", {"op": "remove", "path": "/metadata/_dead_letter_queue"})
    assert back["_dead_letter_queue"] == DEFAULT and back["_max_claim_count"] == 2
    # The default DLQ takes no policy of its own.
    r = api.patch(
        f"/v2/queues/{DEFAULT}",
        json=[{"op": "add", "path": "/metadata/_max_claim_count", "value": 1},
              {"op": "add", "path": "/metadata/_dead_letter_queue", "value": "jobs-dlq"}],
        headers={"Content-Type": PATCH_TYPE},
    )  # fmt: skip
    assert r.status_code == 400 and "no chains" in r.json()["description"]


def test_ttls_below_zaqars_minute_need_the_queue_to_allow_them(api: ApiClient) -> None:
    make_queue(api, "plain", _max_message_ttl=600)
    short = {"messages": [{"body": 1, "ttl": 1}]}
    r = api.post("/v2/queues/plain/messages", json=short)
    assert r.status_code == 400 and "60" in r.json()["description"]
    r = api.put("/v2/queues/q", json={"_max_message_ttl": 5})
    assert r.status_code == 400
    make_queue(api, "fast", _min_message_ttl=1, _max_message_ttl=5, _respect_ttl=True)
    meta = api.get("/v2/queues/fast").json()
    assert (meta["_min_message_ttl"], meta["_max_message_ttl"], meta["_respect_ttl"]) == (
        1,
        5,
        True,
    )
    assert api.post("/v2/queues/fast/messages", json=short).status_code == 201
    # respect-TTL caps a longer TTL instead of refusing it.
    long = {"messages": [{"body": 2, "ttl": 3600}]}
    assert api.post("/v2/queues/fast/messages", json=long).status_code == 201
    # Without it, a TTL above the maximum is refused, as before.
    assert api.post("/v2/queues/plain/messages", json=long).status_code == 400


# Solace's max redelivery N is N deliveries after the first: the max claim count less one. Its
# range follows the claim count's declaration.
_CLAIMS = declared.MAX_CLAIMS
assert _CLAIMS.zaqar is not None
_LOW, _HIGH = (n - 1 for n in _CLAIMS.face_range(_CLAIMS.zaqar))


@pytest.mark.parametrize(
    ("redelivery", "accepted"),
    [(_LOW - 1, False), (_LOW, True), (_HIGH, True), (_HIGH + 1, False), ("2", False)],
)
def test_max_redelivery_is_the_max_claim_count_less_one(
    api: ApiClient, engine: Engine, redelivery: object, accepted: bool
) -> None:
    make_queue(api, "dlq")
    r = api.put("/v2/queues/q", json={"_max_redelivery": redelivery, "_dead_letter_queue": "dlq"})
    assert r.status_code == (201 if accepted else 400), r.text
    queue = engine.find_queue("123456789012", "q")
    if not accepted:
        assert "_max_redelivery" in r.json()["description"] and queue is None
        return
    assert queue is not None and queue.settings.dead_letter is not None
    assert queue.settings.dead_letter.max_claims == redelivery + 1  # type: ignore[operator]
    meta = api.get("/v2/queues/q").json()
    assert (meta["_max_redelivery"], meta["_max_claim_count"]) == (redelivery, redelivery + 1)  # type: ignore[operator]


def test_max_redelivery_and_max_claim_count_sent_together_must_agree(api: ApiClient) -> None:
    make_queue(api, "dlq")
    both = {"_dead_letter_queue": "dlq", "_max_claim_count": 3}
    r = api.put("/v2/queues/q", json={**both, "_max_redelivery": 3})
    assert r.status_code == 400 and "_max_redelivery" in r.json()["description"], r.text
    assert api.get("/v2/queues/q").status_code == 404
    r = api.put("/v2/queues/q", json={**both, "_max_redelivery": 2})
    assert r.status_code == 201, r.text
    # A PATCH changing one of them, with the other as GET showed it, changes both.
    meta = patch(api, "q", {"op": "replace", "path": "/metadata/_max_redelivery", "value": 5})
    assert (meta["_max_redelivery"], meta["_max_claim_count"]) == (5, 6)
    meta = patch(
        api,
        "q",
        {"op": "replace", "path": "/metadata/_max_claim_count", "value": 2},
        {"op": "replace", "path": "/metadata/_max_redelivery", "value": 5},
    )
    assert (meta["_max_redelivery"], meta["_max_claim_count"]) == (1, 2)


def test_max_redelivery_n_delivers_a_message_n_plus_one_times(api: ApiClient) -> None:
    # Given a queue with Solace's max redelivery 2
    make_queue(api, "dlq")
    make_queue(api, "q", _max_redelivery=2, _dead_letter_queue="dlq")
    post(api, "q", {"job": 1})
    # I expect three deliveries (the first and two redeliveries), then the DLQ
    for _ in range(3):
        claim_id, messages = claim(api, "q")
        assert len(messages) == 1
        assert api.delete(f"/v2/queues/q/claims/{claim_id}").status_code == 204
    assert claim(api, "q")[1] == []
    assert len(claim(api, "dlq")[1]) == 1


def test_a_queue_not_eligible_by_default_drops_what_it_would_dead_letter(api: ApiClient) -> None:
    # Given Solace's defaults: DMQ-eligible off, and no redelivery
    make_queue(api, "dlq")
    make_queue(api, "q", _max_redelivery=0, _dead_letter_queue="dlq", _dead_letter_eligible=False)
    post(api, "q", "plain")
    marked = {"body": "marked", "dead_letter_eligible": True}
    r = api.post("/v2/queues/q/messages", json={"messages": [marked]})
    assert r.status_code == 201, r.text
    # When both are claimed and given back
    claim_id, messages = claim(api, "q")
    assert len(messages) == 2
    assert api.delete(f"/v2/queues/q/claims/{claim_id}").status_code == 204
    # I expect only the marked one in the DLQ, and nothing left in the queue
    assert claim(api, "q")[1] == []
    assert [m["body"] for m in claim(api, "dlq")[1]] == ["marked"]
