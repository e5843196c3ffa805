"""Through the SQS face: the DeadLetterEligible message attribute, a nack (visibility 0) at the
limit moving at once, and move tasks on a DLQ no redrive policy names any more."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.api.sqs.conftest import arn


def _policy(dlq: str, count: int) -> str:
    return json.dumps({"deadLetterTargetArn": arn(dlq), "maxReceiveCount": count})


def _stat(sqs: Any, url: str, name: str) -> int:
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[name])["Attributes"]
    return int(got[name])


def _nack_all(sqs: Any, url: str) -> None:
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    for m in got:
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
        )


def test_not_eligible_is_dropped_and_a_nack_at_the_limit_moves(sqs: Any, make_queue: Any) -> None:
    dlq = make_queue("orders-dlq")
    url = make_queue("orders", RedrivePolicy=_policy("orders-dlq", 1))
    no = {"DeadLetterEligible": {"DataType": "String", "StringValue": "false"}}
    sqs.send_message(QueueUrl=url, MessageBody="dropped", MessageAttributes=no)
    sqs.send_message(QueueUrl=url, MessageBody="moved")
    _nack_all(sqs, url)
    # No further receive: the nack at the limit moved (or dropped) them already.
    assert _stat(sqs, url, "ApproximateNumberOfMessages") == 0
    got = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in got] == ["moved"]
    bad = {"DeadLetterEligible": {"DataType": "String", "StringValue": "maybe"}}
    with pytest.raises(ClientError):
        sqs.send_message(QueueUrl=url, MessageBody="x", MessageAttributes=bad)


def test_a_move_task_on_a_stranded_dlq_with_a_destination(sqs: Any, make_queue: Any) -> None:
    make_queue("d")
    url = make_queue("s", RedrivePolicy=_policy("d", 1))
    other = make_queue("other")
    sqs.send_message(QueueUrl=url, MessageBody="m")
    _nack_all(sqs, url)
    sqs.delete_queue(QueueUrl=url)
    sqs.start_message_move_task(SourceArn=arn("d"), DestinationArn=arn("other"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        task = sqs.list_message_move_tasks(SourceArn=arn("d"))["Results"][0]
        if task["Status"] != "RUNNING":
            break
        time.sleep(0.05)
    assert (task["Status"], task["ApproximateNumberOfMessagesMoved"]) == ("COMPLETED", 1)
    assert task["DestinationArn"] == arn("other")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=other)["Messages"]] == ["m"]
