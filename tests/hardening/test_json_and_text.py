"""Inputs that once were stored and then broke later answers: non-finite numbers, lone
surrogates, deep nesting, NUL characters, bad base64. Each is refused (400) before any write,
alike on every store, and the messages of other queues and projects stay as they were."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.api.zaqar.conftest import PATCH_TYPE, ApiClient, claim, make_queue, post
from tests.hardening.conftest import refused

NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e400"]
JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize("number", NON_FINITE)
def test_a_message_body_with_a_non_finite_number_is_refused_and_nothing_is_stored(
    api: ApiClient, untouched: Callable[[], None], number: str
) -> None:
    r = api.post(
        "/v2/queues/p/messages", content=f'{{"messages":[{{"body": {number}}}]}}', headers=JSON
    )
    refused(r, 400, "could not be parsed as JSON")
    # the next claim finds nothing to fail on
    assert claim(api, "p") == (None, [])
    untouched()


@pytest.mark.parametrize("number", NON_FINITE)
def test_queue_metadata_and_patterns_with_non_finite_numbers_are_refused(
    api: ApiClient, untouched: Callable[[], None], number: str
) -> None:
    r = api.put("/v2/queues/meta", content=f'{{"n": {number}}}', headers=JSON)
    refused(r, 400, "could not be parsed as JSON")
    assert api.get("/v2/queues/meta").status_code == 404
    r = api.patch(
        "/v2/queues/keep",
        content=f'[{{"op":"add","path":"/metadata/n","value":{number}}}]',
        headers={"Content-Type": PATCH_TYPE},
    )
    refused(r, 400, "could not be parsed as JSON")
    r = api.put(
        "/v2/queues/orders-dlq/patterns",
        content=f'{{"patterns":[{{"id":"a","score":{number}}}]}}',
        headers=JSON,
    )
    refused(r, 400, "could not be parsed as JSON")
    assert api.get("/v2/queues/orders-dlq/patterns").json() == {"patterns": []}
    untouched()


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"messages":[{"body":"\\ud800"}]}', "surrogate"),
        ('{"messages":[{"body":' + "[" * 100_000 + "]" * 100_000 + "}]}", "nested deeper"),
    ],
    ids=["lone-surrogate", "deep-nesting"],
)
def test_unservable_json_is_refused(
    api: ApiClient, untouched: Callable[[], None], body: str, words: str
) -> None:
    r = api.post("/v2/queues/keep/messages", content=body, headers=JSON)
    refused(r, 400, words)
    untouched()


def test_purge_with_non_string_resource_types_is_refused(
    api: ApiClient, untouched: Callable[[], None]
) -> None:
    r = api.post("/v2/queues/keep/purge", json={"resource_types": [{}]})
    refused(r, 400, "resource_types")
    untouched()


@pytest.mark.parametrize(
    "url",
    [
        "/v2/queues/keep/messages/%00",
        "/v2/queues/keep/claims/%00",
        "/v2/queues?marker=%00",
        "/v2/queues/keep/messages?ids=%00",
        "/v2/queues/orders-dlq/dead_letters?source_queue=a%00",
        "/v2/queues/k%00/stats",
    ],
)
def test_nul_in_a_path_or_query_is_refused_on_every_store(
    api: ApiClient, untouched: Callable[[], None], url: str
) -> None:
    refused(api.get(url), 400, "may not contain NUL")
    untouched()


@pytest.mark.parametrize(
    "doc",
    [
        {"source_queue": "orders\u0000"},
        {"destination": "orders\u0000"},
        {"message_ids": ["a\u0000"]},
        {"pattern_id": "\u0000"},
    ],
)
def test_nul_in_redrive_fields_is_refused(
    api: ApiClient, untouched: Callable[[], None], doc: dict[str, object]
) -> None:
    refused(api.post("/v2/queues/orders-dlq/redrives", json=doc), 400, "may not contain NUL")
    assert api.get("/v2/queues/orders-dlq/redrives").json() == {"redrives": []}
    untouched()


def test_nul_in_dead_letter_fields_is_refused(
    api: ApiClient, untouched: Callable[[], None]
) -> None:
    ids = post(api, "orders", "again")
    claim_id, _ = claim(api, "orders")
    assert claim_id is not None
    r = api.post(
        f"/v2/queues/orders/messages/{ids[0]}/dead_letter?claim_id={claim_id}",
        json={"description": "bad\u0000"},
    )
    refused(r, 400, "may not contain NUL")
    r = api.post(
        "/v2/queues/orders/dead_letter",
        json={"messages": [{"id": ids[0] + "\u0000", "claim_id": claim_id}]},
    )
    refused(r, 400, "may not contain NUL")
    untouched()


@pytest.mark.parametrize("name", ["a.b", "%2E", "%2E%2E", "x" * 65, "a%00"])
def test_queue_names_outside_zaqars_alphabet_are_refused_at_creation(
    api: ApiClient, untouched: Callable[[], None], name: str
) -> None:
    refused(api.put(f"/v2/queues/{name}", json={}), 400, "")
    r = api.post(f"/v2/queues/{name}/messages", json={"messages": [{"body": 1}]})
    assert r.status_code == 400, r.text
    assert api.get("/v2/queues").json()["queues"] == [
        {"name": n, "href": f"/v2/queues/{n}"} for n in ("keep", "orders", "orders-dlq")
    ]
    untouched()


@pytest.mark.parametrize("value", ["not base64!", "YQ=", "YWJj\u00e9"])
def test_a_binary_attribute_must_be_base64(
    api: ApiClient, untouched: Callable[[], None], value: str
) -> None:
    message = {"body": 1, "attributes": {"blob": {"type": "Binary", "value": value}}}
    r = api.post("/v2/queues/keep/messages", json={"messages": [message]})
    refused(r, 400, "not valid base64")
    untouched()
    message["attributes"] = {"blob": {"type": "Binary", "value": "YWJj"}}
    assert api.post("/v2/queues/keep/messages", json={"messages": [message]}).status_code == 201


def test_replacing_a_reserved_key_left_out_of_get_sets_it(api: ApiClient) -> None:
    make_queue(api, "dlq")
    make_queue(api, "src")
    assert "_dead_letter_queue" not in api.get("/v2/queues/src").json()
    r = api.patch(
        "/v2/queues/src",
        json=[
            {"op": "replace", "path": "/metadata/_dead_letter_queue", "value": "dlq"},
            {"op": "replace", "path": "/metadata/_max_claim_count", "value": 2},
        ],
        headers={"Content-Type": PATCH_TYPE},
    )
    assert r.status_code == 200, r.text
    assert r.json()["_dead_letter_queue"] == "dlq"
    # a user key that does not exist still cannot be replaced
    r = api.patch(
        "/v2/queues/src",
        json=[{"op": "replace", "path": "/metadata/colour", "value": "red"}],
        headers={"Content-Type": PATCH_TYPE},
    )
    refused(r, 409, "does not exist")


@pytest.mark.parametrize(
    ("method", "url", "doc", "what"),
    [
        ("POST", "/v2/queues/keep/messages", {"messages": [{"body": 1, "ttl": True}]}, "ttl"),
        ("POST", "/v2/queues/keep/messages", {"messages": [{"body": 1, "ttl": 59}]}, "ttl"),
        ("POST", "/v2/queues/keep/claims", {"ttl": 30}, "ttl"),
        ("POST", "/v2/queues/keep/claims", {"grace": True}, "grace"),
        ("PUT", "/v2/queues/new", {"_default_message_ttl": True}, "_default_message_ttl"),
        ("PUT", "/v2/queues/new", {"_default_claim_ttl": -1}, "_default_claim_ttl"),
    ],
)
def test_ttl_refusals_read_alike(
    api: ApiClient,
    untouched: Callable[[], None],
    method: str,
    url: str,
    doc: dict[str, object],
    what: str,
) -> None:
    r = api.request(method, url, json=doc)
    refused(r, 400, what)
    description = r.json()["description"]
    assert " must be an integer between " in description
    assert "True" not in description  # values are shown as JSON spells them
    untouched()
