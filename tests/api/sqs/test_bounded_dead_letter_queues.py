"""Bounded DLQs and move tasks into bounded queues on the SQS face: a drop-head DLQ drops its
oldest dead letters, a full reject-publish DLQ leaves a message past its maxReceiveCount in
its queue, received again, and StartMessageMoveTask moves only what fits the bounded queue,
leaving the rest in the DLQ."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.api.sqs.conftest import arn


def _policy(dlq: str, count: int) -> str:
    return json.dumps({"deadLetterTargetArn": arn(dlq), "maxReceiveCount": count})


def _count(sqs: Any, url: str) -> int:
    name = "ApproximateNumberOfMessages"
    return int(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[name])["Attributes"][name])


def _nack_all(sqs: Any, url: str) -> None:
    for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]:
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
        )


def _bodies(sqs: Any, url: str) -> list[str]:
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return sorted(m["Body"] for m in got)


def test_a_drop_head_dlq_keeps_its_newest(sqs: Any, make_queue: Any) -> None:
    dlq = make_queue("d", MaxMessages="1")
    url = make_queue("s", RedrivePolicy=_policy("d", 1))
    for body in ("a", "b"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    _nack_all(sqs, url)
    assert _count(sqs, dlq) == 1


def test_a_full_dlq_leaves_the_message_in_its_queue(sqs: Any, make_queue: Any) -> None:
    dlq = make_queue("d", MaxMessages="1", Overflow="reject-publish")
    url = make_queue("s", RedrivePolicy=_policy("d", 1))
    sqs.send_message(QueueUrl=dlq, MessageBody="filler")
    sqs.send_message(QueueUrl=url, MessageBody="m")
    _nack_all(sqs, url)
    # Past its maxReceiveCount, refused by the full DLQ: received again, not lost
    assert _bodies(sqs, url) == ["m"]
    assert _bodies(sqs, dlq) == ["filler"]


def test_a_move_task_moves_only_what_fits(sqs: Any, make_queue: Any) -> None:
    dlq = make_queue("d")
    url = make_queue("s", RedrivePolicy=_policy("d", 1))
    for body in ("a", "b", "c"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    _nack_all(sqs, url)
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"MaxMessages": "2"})
    sqs.start_message_move_task(SourceArn=arn("d"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        task = sqs.list_message_move_tasks(SourceArn=arn("d"))["Results"][0]
        if task["Status"] != "RUNNING":
            break
        time.sleep(0.05)
    assert (task["Status"], task["ApproximateNumberOfMessagesMoved"]) == ("COMPLETED", 2)
    assert _count(sqs, url) == 2 and _count(sqs, dlq) == 1
