"""An HTTP client on the real app over each backend's engine, with Zaqar's headers set."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from deadletter.api.app import build_app
from deadletter.engine.engine import Engine
from tests.support.clients import ApiClient, in_process

CLIENT_ID = "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"
OTHER_CLIENT = "9d1c2b3a-4e5f-4a6b-8c7d-0e1f2a3b4c5d"
PATCH_TYPE = "application/openstack-messaging-v2.0-json-patch"


@pytest.fixture
def api(engine: Engine) -> Iterator[ApiClient]:
    with in_process(build_app(engine), headers={"Client-ID": CLIENT_ID}) as client:
        yield client


def make_queue(api: ApiClient, name: str, **metadata: Any) -> None:
    r = api.put(f"/v2/queues/{name}", json=metadata)
    assert r.status_code == 201, r.text


def post(api: ApiClient, queue: str, *bodies: Any, **fields: Any) -> list[str]:
    """Send messages; return their ids."""
    r = api.post(
        f"/v2/queues/{queue}/messages", json={"messages": [{"body": b, **fields} for b in bodies]}
    )
    assert r.status_code == 201, r.text
    return [href.rsplit("/", 1)[1] for href in r.json()["resources"]]


def claim(api: ApiClient, queue: str, limit: int = 10, **body: Any) -> tuple[str | None, list[Any]]:
    """Claim; return (claim id, messages) or (None, []) on 204."""
    r = api.post(f"/v2/queues/{queue}/claims?limit={limit}", json=body)
    if r.status_code == 204:
        return None, []
    assert r.status_code == 201, r.text
    return r.headers["Location"].rsplit("/", 1)[1], r.json()["messages"]


def with_dlq(api: ApiClient, source: str = "orders", dlq: str = "orders-dlq", n: int = 3) -> None:
    make_queue(api, dlq)
    make_queue(api, source, _max_claim_count=n, _dead_letter_queue=dlq)
