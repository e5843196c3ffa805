"""boto3 against the real app served by uvicorn, on each backend, with the engine's worker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from deadletter.api.app import AppOptions, build_app
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage.base import Store
from tests.support.servers import serving

ACCOUNT = "123456789012"
REGION = "us-east-1"


@pytest.fixture
def server_url(store: Store) -> Iterator[str]:
    engine = Engine(store)
    worker = Worker(engine, sweep_interval=0.2)
    app = build_app(engine, AppOptions(test_mode=True), background=[worker])
    with serving(app) as url:
        yield url


def client(url: str, service: str = "sqs", **config: Any) -> Any:
    return boto3.client(
        service,
        endpoint_url=url,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        **config,
    )


@pytest.fixture
def sqs(server_url: str) -> Any:
    return client(server_url)


@pytest.fixture
def make_queue(sqs: Any) -> Callable[..., str]:
    """Create a queue; returns its URL."""

    def make(name: str, **attributes: str) -> str:
        url: str = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        return url

    return make


def arn(name: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
