"""Request bodies and the lists and documents inside them are bounded: a body over the limit is
refused (413, in the protocol of the path) before it is read, and nothing else changes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from tests.api.zaqar.conftest import PATCH_TYPE, ApiClient
from tests.hardening.conftest import refused

CHUNK = 64 * 1024
DECLARED = 300 * 1024 * 1024


class Stream:
    """A 300 MB body sent in chunks as the server asks for them, counting what it read."""

    def __init__(self) -> None:
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunk = b"x" * CHUNK
        while self.sent * CHUNK < DECLARED:
            self.sent += 1
            yield chunk


def test_a_300_mb_zaqar_body_is_refused_unread(
    api: ApiClient, untouched: Callable[[], None]
) -> None:
    body = Stream()
    r = api.post(
        "/v2/queues/keep/messages",
        content=body,
        headers={"Content-Length": str(DECLARED), "Content-Type": "application/json"},
    )
    refused(r, 413, "may not be larger than 4194304 bytes")
    assert body.sent == 0
    untouched()


@pytest.mark.parametrize("protocol", ["json", "query"])
def test_a_300_mb_sqs_body_is_refused_unread_in_the_sqs_format(
    api: ApiClient, untouched: Callable[[], None], protocol: str
) -> None:
    body = Stream()
    headers = {"Content-Length": str(DECLARED)}
    if protocol == "json":
        headers |= {
            "X-Amz-Target": "AmazonSQS.SendMessage",
            "Content-Type": "application/x-amz-json-1.0",
        }
    else:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    r = api.post("/", content=body, headers=headers)
    assert r.status_code == 413
    assert body.sent == 0
    if protocol == "json":
        assert r.json()["__type"] == "com.amazonaws.sqs#RequestEntityTooLarge"
        assert "4194304 bytes" in r.json()["message"]
    else:
        assert "<Code>RequestEntityTooLarge</Code>" in r.text  # docs/sqs.md, the error table
    untouched()


def test_a_chunked_body_is_refused_once_it_passes_the_limit(
    api: ApiClient, untouched: Callable[[], None]
) -> None:
    body = Stream()
    r = api.post("/v2/queues/keep/messages", content=body)  # no Content-Length: chunked
    refused(r, 413, "may not be larger than")
    assert body.sent * CHUNK <= 4 * 1024 * 1024 + CHUNK
    untouched()


def test_stored_patterns_are_bounded_in_count(
    api: ApiClient, untouched: Callable[[], None]
) -> None:
    patterns = [{"id": str(i)} for i in range(1001)]
    r = api.put("/v2/queues/orders-dlq/patterns", json={"patterns": patterns})
    refused(r, 400, "at most 1000 patterns")
    assert api.get("/v2/queues/orders-dlq/patterns").json() == {"patterns": []}
    untouched()


def test_queue_metadata_is_bounded_when_patched_too(
    api: ApiClient, untouched: Callable[[], None]
) -> None:
    r = api.patch(
        "/v2/queues/keep",
        json=[{"op": "add", "path": "/metadata/big", "value": "x" * 70_000}],
        headers={"Content-Type": PATCH_TYPE},
    )
    refused(r, 400, "Queue metadata may not be larger than 65536 bytes")
    assert "big" not in api.get("/v2/queues/keep").json()
    untouched()
