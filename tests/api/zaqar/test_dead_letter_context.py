"""Over HTTP: the error as fields on a dead-lettering, the deaths per queue and reason in a
dead letter's provenance, and a release that is not requeued."""

from __future__ import annotations

from typing import Any

import pytest

from deadletter.domain.model import MAX_ERROR_CLASS, MAX_ERROR_DETAILS
from tests.api.zaqar.conftest import ApiClient, claim, make_queue, post, with_dlq

ERROR = {"class": "KeyError", "message": "'id'", "stack": 'Traceback:\n  File "x.py"'}


def dead_letters(api: ApiClient, dlq: str) -> list[dict[str, Any]]:
    r = api.get(f"/v2/queues/{dlq}/dead_letters")
    assert r.status_code == 200, r.text
    messages: list[dict[str, Any]] = r.json()["messages"]
    return messages


def one_claimed(api: ApiClient, queue: str = "orders") -> tuple[str, str]:
    (mid,) = post(api, queue, {"order": 1})
    claim_id, _ = claim(api, queue)
    assert claim_id is not None
    return mid, claim_id


@pytest.mark.parametrize("route", ["message", "batch"])
def test_the_error_as_fields_is_kept_with_its_text_form_and_the_deaths(
    api: ApiClient, route: str
) -> None:
    # Given a consumer that dead-letters a message with the exception's fields,
    with_dlq(api)
    mid, claim_id = one_claimed(api)
    if route == "message":
        r = api.post(
            f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={claim_id}",
            json={"description": "customer.id missing", "error": ERROR},
        )
    else:
        r = api.post(
            "/v2/queues/orders/dead_letter",
            json={"messages": [{"id": mid, "claim_id": claim_id}], "error": ERROR},
        )
    assert r.status_code == 200, r.text
    # the dead letter shows each field, its text form as before, and one death.
    (dead,) = dead_letters(api, "orders-dlq")
    prov = dead["provenance"]
    assert (prov["error"], prov["error_class"], prov["error_stack"]) == (
        "'id'",
        "KeyError",
        ERROR["stack"],
    )
    (death,) = prov["deaths"]
    assert (death["queue"], death["reason"], death["count"]) == ("orders", "rejected", 1)
    assert death["first_at"] == death["last_at"] == prov["dead_lettered_at"]


def test_a_text_error_reads_as_before(api: ApiClient) -> None:
    with_dlq(api)
    mid, claim_id = one_claimed(api)
    r = api.post(
        f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={claim_id}",
        json={"error": "KeyError: 'id'"},
    )
    assert r.status_code == 200, r.text
    prov = dead_letters(api, "orders-dlq")[0]["provenance"]
    assert prov["error"] == "KeyError: 'id'"
    assert "error_class" not in prov and "error_stack" not in prov


BAD_ERRORS: list[Any] = [
    {},
    {"kind": "x"},
    {"class": 1},
    {"message": ["m"]},
    {"stack": {"a": 1}},
    {"class": "E\x00"},
    {"class": "C" * (MAX_ERROR_CLASS + 1)},
    {"message": "m" * (MAX_ERROR_DETAILS + 1)},
    {"stack": "s" * (MAX_ERROR_DETAILS + 1)},
    ["KeyError"],
    7,
    True,
]


@pytest.mark.parametrize("route", ["message", "batch"])
@pytest.mark.parametrize("error", BAD_ERRORS, ids=repr)
def test_a_bad_error_is_refused_before_anything_moves(
    api: ApiClient, route: str, error: Any
) -> None:
    with_dlq(api)
    mid, claim_id = one_claimed(api)
    if route == "message":
        r = api.post(
            f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={claim_id}",
            json={"error": error},
        )
    else:
        r = api.post(
            "/v2/queues/orders/dead_letter",
            json={"messages": [{"id": mid, "claim_id": claim_id}], "error": error},
        )
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"title", "description"}
    assert dead_letters(api, "orders-dlq") == []


def release(api: ApiClient, queue: str, mid: str, claim_id: str, body: Any, tag: str = "") -> Any:
    query = f"claim_id={claim_id}" + (f"&tag={tag}" if tag else "")
    return api.post(f"/v2/queues/{queue}/messages/{mid}/release?{query}", json=body)


@pytest.mark.parametrize("tag", ["", "billing"])
def test_a_release_not_requeued_dead_letters_at_once(api: ApiClient, tag: str) -> None:
    # Given a queue whose DLQ takes a message after 5 deliveries, and one delivery,
    with_dlq(api, n=5)
    if tag:
        assert api.put(f"/v2/queues/orders/tags/{tag}", json={}).status_code == 201
    (mid,) = post(api, "orders", {"order": 1})
    r = api.post(f"/v2/queues/orders/claims{'?tag=' + tag if tag else ''}", json={})
    assert r.status_code == 201, r.text
    claim_id = r.headers["Location"].rsplit("/", 1)[1]
    # when the consumer releases it with requeue false,
    assert release(api, "orders", mid, claim_id, {"requeue": False}, tag).status_code == 204
    # it is in the DLQ now, rejected.
    (dead,) = dead_letters(api, "orders-dlq")
    assert dead["provenance"]["reason"] == "rejected"
    assert dead["provenance"].get("source_tag") == (tag or None)


def test_a_release_not_requeued_without_a_dlq_drops_and_counts(api: ApiClient) -> None:
    make_queue(api, "plain")
    mid, claim_id = one_claimed(api, "plain")
    assert release(api, "plain", mid, claim_id, {"requeue": False}).status_code == 204
    stats = api.get("/v2/queues/plain/stats").json()
    assert stats["messages"]["total"] == 0
    assert stats["dead_letter"]["dropped"] == {"rejected": 1}


@pytest.mark.parametrize(
    "body",
    [{"requeue": "false"}, {"requeue": 0}, {"requeue": None}, {"requeue": False, "delay": 5}],
)
def test_a_bad_requeue_is_refused_and_the_message_stays(api: ApiClient, body: Any) -> None:
    with_dlq(api)
    mid, claim_id = one_claimed(api)
    r = release(api, "orders", mid, claim_id, body)
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"title", "description"}
    assert dead_letters(api, "orders-dlq") == []
    assert api.get("/v2/queues/orders/stats").json()["messages"]["claimed"] == 1
