"""An SQS queue name is 1 to 80 characters, a FIFO queue's `.fifo` suffix included: at every
length on both sides of the bound, for both kinds, CreateQueue accepts or refuses as AWS does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from deadletter.api.app import build_app
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient
from tests.support.clients import in_process

LENGTHS = [1, 2, 74, 75, 76, 79, 80, 81, 82, 100]


def _name(length: int, fifo: bool) -> str:
    """A queue name of `length` characters in all, ending in `.fifo` for a FIFO queue."""
    suffix = ".fifo" if fifo else ""
    return "q" * (length - len(suffix)) + suffix


@pytest.fixture
def app(engine: Engine) -> Iterator[ApiClient]:
    with in_process(build_app(engine)) as client:
        yield client


def _create(app: ApiClient, params: dict[str, Any]) -> httpx.Response:
    return app.post(
        "/",
        content=json.dumps(params),
        headers={
            "X-Amz-Target": "AmazonSQS.CreateQueue",
            "Content-Type": "application/x-amz-json-1.0",
        },
    )


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_create_queue_holds_names_to_80_characters(app: ApiClient, fifo: bool) -> None:
    outcomes = {}
    for length in LENGTHS:
        if fifo and length <= len(".fifo"):
            continue
        name = _name(length, fifo)
        params: dict[str, Any] = {"QueueName": name}
        if fifo:
            params["Attributes"] = {"FifoQueue": "true"}
        r = _create(app, params)
        outcomes[length] = r.status_code
        if r.status_code == 400:
            assert r.json()["__type"].endswith("InvalidParameterValue"), r.text
            assert "1 to 80 in length" in r.json()["message"]
    expected = {n: 200 if n <= 80 else 400 for n in outcomes}
    assert outcomes == expected
