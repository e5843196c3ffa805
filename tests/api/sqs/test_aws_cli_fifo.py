"""A FIFO queue driven by the AWS CLI, unchanged but for --endpoint-url: group order, a group
held while one of its messages is in flight, deduplication, and a FIFO dead-letter queue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.api.sqs.test_aws_cli import _aws, aws_cli  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("aws_cli")


def _send(url: str, tmp_path: Path, queue: str, body: str, group: str, dedup: str) -> str:
    sent = _aws(url, tmp_path, "send-message", "--queue-url", queue, "--message-body", body,
                "--message-group-id", group, "--message-deduplication-id", dedup)  # fmt: skip
    return str(sent["MessageId"])


def _receive(url: str, tmp_path: Path, queue: str, n: int) -> list[dict[str, str]]:
    got = _aws(url, tmp_path, "receive-message", "--queue-url", queue,
               "--max-number-of-messages", str(n), "--attribute-names", "All")  # fmt: skip
    return list(got.get("Messages", [])) if got else []


def test_fifo_through_the_aws_cli(server_url: str, tmp_path: Path) -> None:
    # Given a FIFO queue whose DLQ is FIFO, after two receives
    dlq = _aws(server_url, tmp_path, "create-queue", "--queue-name", "cli-dlq.fifo",
               "--attributes", "FifoQueue=true")["QueueUrl"]  # fmt: skip
    arn = _aws(server_url, tmp_path, "get-queue-attributes", "--queue-url", dlq,
               "--attribute-names", "QueueArn")["Attributes"]["QueueArn"]  # fmt: skip
    redrive = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": "2"})
    attributes = json.dumps({"FifoQueue": "true", "RedrivePolicy": redrive,
                             "VisibilityTimeout": "0"})  # fmt: skip
    queue = _aws(server_url, tmp_path, "create-queue", "--queue-name", "cli.fifo",
                 "--attributes", attributes)["QueueUrl"]  # fmt: skip
    # when a group's messages are sent, one of them twice with the same deduplication id
    first = _send(server_url, tmp_path, queue, "a1", "a", "d1")
    assert _send(server_url, tmp_path, queue, "a1 again", "a", "d1") == first  # deduplicated
    _send(server_url, tmp_path, queue, "a2", "a", "d2")
    _send(server_url, tmp_path, queue, "b1", "b", "d3")
    # then they arrive in group order, each with its group and sequence number
    got = _receive(server_url, tmp_path, queue, 10)
    assert [m["Body"] for m in got] == ["a1", "a2", "b1"]
    assert [m["Attributes"]["MessageGroupId"] for m in got] == ["a", "a", "b"]
    numbers = [int(m["Attributes"]["SequenceNumber"]) for m in got]
    assert numbers == sorted(numbers)
    # and once received maxReceiveCount (2) times, the next receive moves them to the FIFO
    # DLQ, group order kept
    assert [m["Body"] for m in _receive(server_url, tmp_path, queue, 10)] == ["a1", "a2", "b1"]
    assert _receive(server_url, tmp_path, queue, 10) == []
    dead = _receive(server_url, tmp_path, dlq, 10)
    assert [m["Body"] for m in dead] == ["a1", "a2", "b1"]


def test_a_group_in_flight_is_held_through_the_aws_cli(server_url: str, tmp_path: Path) -> None:
    attributes = "FifoQueue=true,ContentBasedDeduplication=true"
    queue = _aws(server_url, tmp_path, "create-queue", "--queue-name", "held.fifo",
                 "--attributes", attributes)["QueueUrl"]  # fmt: skip
    for body in ("x1", "x2"):
        _aws(server_url, tmp_path, "send-message", "--queue-url", queue, "--message-body", body,
             "--message-group-id", "x")  # fmt: skip
    (held,) = _receive(server_url, tmp_path, queue, 1)
    assert held["Body"] == "x1"
    # x2 waits while x1 is in flight, then comes once x1 is deleted
    assert _receive(server_url, tmp_path, queue, 10) == []
    _aws(server_url, tmp_path, "delete-message", "--queue-url", queue,
         "--receipt-handle", held["ReceiptHandle"])  # fmt: skip
    assert [m["Body"] for m in _receive(server_url, tmp_path, queue, 10)] == ["x2"]
