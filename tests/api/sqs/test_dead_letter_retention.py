"""A dead letter lives for its DLQ's MessageRetentionPeriod, as AWS applies it: on a standard
DLQ counted from the message's original enqueue time, on a FIFO DLQ from the move. Before,
a dead letter kept its source's expiry: a DLQ with a retention of 14 days beside a source of
60 s lost its dead letters after 60 s."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from deadletter.api.app import AppOptions, build_app
from deadletter.client import DEFAULT_PROJECT
from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage.base import Store
from tests.api.sqs.conftest import arn, client
from tests.support.servers import serving

HOUR = 3600


@pytest.fixture
def served(store: Store, clock: ManualClock) -> Iterator[tuple[Any, Engine]]:
    """A JSON-protocol client of the server on `clock`, whose sweeps the test runs."""
    engine = Engine(store, clock)
    app = build_app(
        engine, AppOptions(test_mode=True), background=[Worker(engine, sweep_interval=3600)]
    )
    with serving(app) as url:
        yield client(url), engine


def sweep(engine: Engine) -> None:
    while engine.sweep_expired():
        pass


def queues(sqs: Any, *, source: int, dlq: int, fifo: bool = False) -> tuple[str, str]:
    """A source with that retention whose DLQ has its own; their URLs."""
    suffix = ".fifo" if fifo else ""
    extra = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if fifo else {}
    dlq_url = sqs.create_queue(
        QueueName=f"orders-dlq{suffix}",
        Attributes={"MessageRetentionPeriod": str(dlq), **extra},
    )["QueueUrl"]
    policy = {"deadLetterTargetArn": arn(f"orders-dlq{suffix}"), "maxReceiveCount": "3"}
    source_url = sqs.create_queue(
        QueueName=f"orders{suffix}",
        Attributes={
            "MessageRetentionPeriod": str(source),
            "RedrivePolicy": json.dumps(policy),
            **extra,
        },
    )["QueueUrl"]
    return source_url, dlq_url


def fail_three_times(sqs: Any, url: str, fifo: bool = False) -> str:
    """A message sent and received three times, never deleted; the fourth receive moves it
    to the DLQ. Its id."""
    extra = {"MessageGroupId": "g"} if fifo else {}
    sent = sqs.send_message(QueueUrl=url, MessageBody='{"order": 100}', **extra)["MessageId"]
    for _ in range(3):
        got = sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)["Messages"]
        assert [m["MessageId"] for m in got] == [sent]
    assert sqs.receive_message(QueueUrl=url, VisibilityTimeout=0).get("Messages", []) == []
    return str(sent)


def in_dlq(engine: Engine, name: str) -> int:
    return engine.stats(DEFAULT_PROJECT, name).total


def test_a_dead_letter_outlives_its_sources_retention_by_the_dlqs(
    served: tuple[Any, Engine], clock: ManualClock
) -> None:
    sqs, engine = served
    # Given a source that keeps messages 60 s and a DLQ that keeps them 14 days
    source, _ = queues(sqs, source=60, dlq=1_209_600)
    fail_three_times(sqs, source)
    # when two hours have passed
    clock.advance(2 * HOUR)
    sweep(engine)
    # I expect the dead letter in the DLQ still
    assert in_dlq(engine, "orders-dlq") == 1


def test_a_standard_dlq_counts_its_retention_from_the_original_enqueue_time(
    served: tuple[Any, Engine], clock: ManualClock
) -> None:
    sqs, engine = served
    # Given a message that spent half an hour in its source before its move to a DLQ that
    # keeps messages an hour
    source, dlq = queues(sqs, source=1_209_600, dlq=HOUR)
    sqs.send_message(QueueUrl=source, MessageBody="x")
    clock.advance(HOUR / 2)
    for _ in range(3):
        sqs.receive_message(QueueUrl=source, VisibilityTimeout=0)
    sqs.receive_message(QueueUrl=source, VisibilityTimeout=0)
    assert in_dlq(engine, "orders-dlq") == 1
    # I expect it to leave the DLQ an hour after it was first sent
    clock.advance(HOUR / 2 - 1)
    sweep(engine)
    assert in_dlq(engine, "orders-dlq") == 1
    clock.advance(2)
    sweep(engine)
    assert in_dlq(engine, "orders-dlq") == 0
    # counted as a dead letter that expired
    assert engine.stats(DEFAULT_PROJECT, "orders-dlq").dead_letters_expired == 1
    assert sqs.receive_message(QueueUrl=dlq).get("Messages", []) == []


def test_a_fifo_dlq_counts_its_retention_from_the_move(
    served: tuple[Any, Engine], clock: ManualClock
) -> None:
    sqs, engine = served
    # Given a message that spent half an hour in its FIFO source before its move to a FIFO
    # DLQ that keeps messages an hour
    source, dlq = queues(sqs, source=1_209_600, dlq=HOUR, fifo=True)
    sqs.send_message(QueueUrl=source, MessageBody="x", MessageGroupId="g")
    clock.advance(HOUR / 2)
    for _ in range(4):
        sqs.receive_message(QueueUrl=source, VisibilityTimeout=0)
    assert in_dlq(engine, "orders-dlq.fifo") == 1
    # I expect it to stay an hour from the move, not from the send
    clock.advance(HOUR - 1)
    sweep(engine)
    assert in_dlq(engine, "orders-dlq.fifo") == 1
    clock.advance(2)
    sweep(engine)
    assert in_dlq(engine, "orders-dlq.fifo") == 0
    assert sqs.receive_message(QueueUrl=dlq).get("Messages", []) == []
