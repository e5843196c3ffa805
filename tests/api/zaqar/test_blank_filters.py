"""A blank filter is refused, never taken as no filter: an empty, whitespace-only, NUL or
full-width-space value of any name of the language, on every route the route table says
takes the filter (query or body), is a 400 naming it before anything is written, and the
client sends such a value on rather than dropping it. Both stores."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deadletter.api.zaqar.routes import ROUTES, ZaqarRoute
from deadletter.client import ApiError, Client
from deadletter.domain import errors, filters
from tests.api.zaqar.conftest import ApiClient, claim, post, with_dlq
from tests.support.blank_values import BLANKS, MATRIX, blank_texts

DLQ = "/v2/queues/orders-dlq"
KEYS = set(filters.FILTER_KEYS)


def takes_the_filter(route: ZaqarRoute) -> str | None:
    """Where `route` reads the filter language: "query", "body" or None (its row says)."""
    if set(route.reads.query) >= KEYS:
        return "query"
    # (a saved filter's body takes every name but `filter`: it names no other saved filter)
    if route.reads.body is not None and route.reads.body >= KEYS - {"filter"}:
        return "body"
    return None


FILTERED = [r for r in ROUTES if takes_the_filter(r)]


def test_the_routes_that_take_the_filter_are_found_in_the_table() -> None:
    # browse, count, purge and redrive (its dry run the same route): a route added with the
    # filter's names is in the matrix below the day it is added
    assert {(r.method, r.name) for r in FILTERED} >= {
        ("GET", "list_dead_letters"), ("GET", "count_dead_letters"),
        ("DELETE", "purge_dead_letters"), ("POST", "start_redrive"),
        ("PUT", "put_saved_filter")}  # fmt: skip


@pytest.fixture
def two_dead_letters(api: ApiClient) -> Iterator[None]:
    """Given orders-dlq holding two dead letters of orders."""
    with_dlq(api)
    for n in (1, 2):
        (mid,) = post(api, "orders", {"n": n})
        cid, _ = claim(api, "orders", limit=1)
        r = api.post(f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={cid}",
                     json={"error": {"class": "KeyError"}})  # fmt: skip
        assert r.status_code == 200, r.text
    yield
    # and whatever was refused, both are still there and no task was started
    assert api.get(f"{DLQ}/dead_letters/count").json() == {"count": 2}
    assert api.get(f"{DLQ}/redrives").json()["redrives"] == []
    assert api.get(f"{DLQ}/dead_letters/filters").json()["filters"] == []


def needs(route: ZaqarRoute) -> dict[str, Any]:
    """What a body route takes beside the filter and checks first (a discard's `why`)."""
    return {"why": "a blank filter"} if "why" in (route.reads.body or ()) else {}


def send(api: ApiClient, route: ZaqarRoute, fields: list[tuple[str, Any]]) -> httpx.Response:
    path = route.path.format(queue="orders-dlq", name="saved")
    if takes_the_filter(route) == "query":
        return api.request(route.method, path, params=fields)
    body: dict[str, Any] = needs(route)
    for key, value in fields:
        body[key] = [*body[key], value] if key in body else value
    return api.request(route.method, path, json=body)


def refused(r: httpx.Response, key: str, value: Any = None) -> None:
    assert r.status_code == 400, (key, r.text)
    # the same title on every route; but a NUL, refused by the edge that reads every text
    # before the filter is parsed, and a name the route does not take (a saved filter's
    # `filter`), refused as every unknown field is
    other = "\\x00" in repr(value) or r.json()["description"].startswith("Unknown field")
    assert r.json()["title"] in (("Invalid filter", "Invalid API request") if other
                                 else ("Invalid filter",)), r.text  # fmt: skip
    assert key in r.json()["description"], r.text


@pytest.mark.parametrize("route", FILTERED, ids=lambda r: f"{r.method} {r.name}")
def test_a_blank_filter_is_refused_before_anything_is_written(
    api: ApiClient, two_dead_letters: None, counted: list[str], route: ZaqarRoute
) -> None:
    for key, value in MATRIX:
        counted.clear()
        # alone, and beside a good filter that would narrow the selection to nothing
        for fields in ([(key, value)], [("source_queue", "orders"), (key, value)]):
            refused(send(api, route, fields), key, value)
        assert "write" not in counted, (key, value)


@pytest.mark.parametrize("route", [r for r in FILTERED if takes_the_filter(r) == "body"],
                         ids=lambda r: r.name)  # fmt: skip
def test_a_null_or_an_empty_list_in_a_body_is_refused_too(
    api: ApiClient, two_dead_letters: None, route: ZaqarRoute
) -> None:
    path, more = route.path.format(queue="orders-dlq", name="saved"), needs(route)
    for key in filters.FILTER_KEYS:
        refused(api.request(route.method, path, json={key: None, **more}), key)
    refused(api.request(route.method, path, json={"attribute": [], **more}), "attribute")
    refused(
        api.request(route.method, path, json={"attribute": ["tenant", " "], **more}), "attribute"
    )


TAKE_IDS = [r for r in FILTERED if "message_ids" in (r.reads.body or ())]
# A list of ids that names no dead letter, or fewer than it lists: `null`, none, a blank id
# alone or beside a real-looking one.
BLANK_IDS = [None, [], *([v] for v in BLANKS), *(["m1", v] for v in BLANKS)]


def test_the_routes_that_take_ids_are_found_in_the_table() -> None:
    assert {r.name for r in TAKE_IDS} >= {
        "start_redrive", "archive_dead_letters", "restore_dead_letters",
        "discard_dead_letters"}  # fmt: skip


@pytest.mark.parametrize("route", TAKE_IDS, ids=lambda r: r.name)
def test_a_blank_id_or_no_id_in_message_ids_is_refused_naming_it(
    api: ApiClient, two_dead_letters: None, counted: list[str], route: ZaqarRoute
) -> None:
    path, more = route.path.format(queue="orders-dlq"), needs(route)
    for ids in BLANK_IDS:
        counted.clear()
        for dry_run in (True, False):
            body = {"message_ids": ids, "dry_run": dry_run, **more}
            refused(api.request(route.method, path, json=body), "message_ids", ids)
        assert "write" not in counted, ids


@settings(max_examples=100)
@given(ids=st.lists(st.text(max_size=4), max_size=3), blank=blank_texts, at=st.integers(0, 3))
def test_any_blank_id_among_ids_is_refused_naming_it(ids: list[str], blank: str, at: int) -> None:
    listed = [*ids[:at], blank, *ids[at:]]
    with pytest.raises(errors.InvalidFilter, match=r"message_ids\[\d+\] is a blank id"):
        filters.message_ids(listed)
    with pytest.raises(errors.InvalidFilter, match="message_ids lists no id"):
        filters.message_ids([])
    kept = [i for i in ids if not filters.blank(i)] or ["m1"]
    assert filters.message_ids(kept) == tuple(kept)


@pytest.mark.one_store
def test_the_client_sends_a_blank_filter_on_and_the_server_refuses_it(
    api: ApiClient, two_dead_letters: None
) -> None:
    def forward(request: httpx.Request) -> httpx.Response:
        headers = {k: v for k, v in request.headers.items() if k != "host"}
        r = api.request(request.method, str(request.url), content=request.content, headers=headers)
        return httpx.Response(r.status_code, headers=r.headers, content=r.content)

    with Client("http://testserver", transport=httpx.MockTransport(forward)) as client:
        for value in BLANKS:
            with pytest.raises(ApiError, match="error_class"):
                client.purge_dead_letters("orders-dlq", error_class=value)
            with pytest.raises(ApiError, match="attribute"):
                client.count_dead_letters("orders-dlq", attribute=["tenant", value])
            with pytest.raises(ApiError, match="source_queue"):
                next(client.dead_letters("orders-dlq", source_queue=value))
            with pytest.raises(ApiError, match="reason"):
                client.start_redrive("orders-dlq", reason=value)


@settings(max_examples=200)
@given(key=st.sampled_from(filters.FILTER_KEYS), value=blank_texts)
def test_any_blank_value_of_any_name_is_refused_naming_it(key: str, value: str) -> None:
    for given_ in ({key: [value]}, {key: ["x", value]} if key == "attribute" else {key: [value]}):
        with pytest.raises(errors.InvalidFilter, match=key):
            filters.parse(given_)
    with pytest.raises(errors.InvalidFilter, match=key):
        filters.from_json({key: value})


@pytest.mark.parametrize("value", BLANKS)
def test_a_blank_value_is_blank_and_text_around_spaces_is_not(value: str) -> None:
    assert filters.blank(value)
    assert not filters.blank(f"{value}KeyError{value}")
