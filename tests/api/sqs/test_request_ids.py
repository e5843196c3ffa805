"""Every answer carries its own request id, shaped as AWS's (a UUID), in either protocol."""

from __future__ import annotations

import re

import pytest

from deadletter.api.sqs.wire import new_request_id

# A request id is made and sent by the face, whatever the store (tests/README.md).
pytestmark = pytest.mark.one_store

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def test_request_ids_are_distinct_uuids() -> None:
    ids = [new_request_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    assert all(UUID.match(i) for i in ids)
