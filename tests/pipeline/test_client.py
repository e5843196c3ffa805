"""What the pipeline asks of `deadletter.client`, against the contract stub (no Spark)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from deadletter.client import DEFAULT_PROJECT, Client
from deadletter.pipeline.corpus import generate
from deadletter.pipeline.remote import put_patterns
from tests.pipeline.stub import ContractStub, as_api_message
from tests.support.servers import serving

RECORDS = list(generate(60, seed=5))


@pytest.fixture(scope="module")
def stub() -> Iterator[tuple[ContractStub, str]]:
    server = ContractStub([as_api_message(r) for r in RECORDS])
    with serving(server.app) as url:
        yield server, url


def test_dead_letter_pages_follow_the_next_links_with_the_filters(
    stub: tuple[ContractStub, str],
) -> None:
    server, url = stub
    server.browses.clear()
    want = [r["message_id"] for r in RECORDS if r["source_queue"] == "orders"]
    with Client(url) as client:
        pages = list(client.dead_letter_pages("dlq", 7, source_queue="orders", reason=None))
    assert [m["id"] for page in pages for m in page] == sorted(
        want, key=lambda i: next(r["dead_lettered_at"] for r in RECORDS if r["message_id"] == i)
    )
    assert all(len(page) == 7 for page in pages[:-1])
    assert len(server.browses) == len(pages) > 1
    assert all(b["source_queue"] == "orders" and "reason" not in b for b in server.browses)
    assert all("marker" in b for b in server.browses[1:])


def test_the_first_page_alone_costs_one_request(stub: tuple[ContractStub, str]) -> None:
    server, url = stub
    server.browses.clear()
    with Client(url) as client:
        first = next(client.dead_letter_pages("dlq", 1))
    assert len(first) == 1 and len(server.browses) == 1


def test_messages_and_patterns_are_posted_as_given(stub: tuple[ContractStub, str]) -> None:
    server, url = stub
    server.posts.clear()
    message = {"body": {"a": 1}, "ttl": 60, "attributes": {"k": {"type": "String", "value": "v"}}}
    with Client(url) as client:
        client.send_messages("replay", [message])
    assert server.posts == [("replay", [message])]
    put_patterns(url, "dlq", [{"id": "p1", "message_ids": ["m1"]}])
    assert server.patterns["dlq"] == [{"id": "p1", "message_ids": ["m1"]}]


def test_put_patterns_takes_a_transport_and_the_default_project() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    put_patterns("http://dl.test", "dlq", [{"id": "p"}], transport=httpx.MockTransport(handle))
    (request,) = seen
    assert (request.method, request.url.path) == ("PUT", "/v2/queues/dlq/patterns")
    assert request.headers["X-Project-ID"] == DEFAULT_PROJECT
    assert json.loads(request.content) == {"patterns": [{"id": "p"}]}
