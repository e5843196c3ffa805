"""The per-project queue quota as each face answers it: Zaqar 403, SQS OverLimit, and a
Zaqar post to a missing queue refused alike, with nothing created."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from deadletter.api.app import AppOptions, build_app
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from tests.auth.live import boto, query_call, zaqar
from tests.support.servers import serving

QUOTA = 2
PROJECT = "123456789012"


@pytest.fixture
def full(store: Store) -> Iterator[tuple[str, Engine]]:
    """A server whose default project already holds its quota of queues."""
    engine = Engine(store, queue_quota=QUOTA)
    for i in range(QUOTA):
        engine.create_queue(PROJECT, f"q{i}")
    with serving(build_app(engine, AppOptions(test_mode=True))) as url:
        yield url, engine


def test_zaqar_refuses_a_queue_beyond_the_quota_with_403(full: tuple[str, Engine]) -> None:
    url, engine = full
    put = zaqar(url, "PUT", "/v2/queues/extra")
    assert put.status_code == 403
    assert put.json()["title"] == "Queue quota exceeded"
    assert "--max-queues" in put.json()["description"]
    # Zaqar's post to a missing queue would create it: refused alike, nothing sent anywhere.
    post = zaqar(url, "POST", "/v2/queues/extra/messages", json={"messages": [{"body": 1}]})
    assert post.status_code == 403
    assert engine.find_queue(PROJECT, "extra") is None


def test_sqs_refuses_a_queue_beyond_the_quota_with_over_limit(full: tuple[str, Engine]) -> None:
    url, engine = full
    with pytest.raises(ClientError) as raised:
        boto(url, "x", "x").create_queue(QueueName="extra")
    assert raised.value.response["Error"]["Code"] == "OverLimit"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    query = query_call(url, "x", "x", Action="CreateQueue", QueueName="extra", Version="2012-11-05")
    assert query.status_code == 403
    assert "<Code>OverLimit</Code>" in query.text
    assert engine.find_queue(PROJECT, "extra") is None
