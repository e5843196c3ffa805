"""The `RetryPolicy` attribute on the SQS face, and the backoff on the wall clock: a message
given back with visibility 0 comes back no sooner than the policy's minimum."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError


def test_the_attribute_is_kept_shown_and_removed(sqs: Any, make_queue: Callable[..., str]) -> None:
    url = make_queue("q", RetryPolicy=json.dumps({"minimumBackoff": 10, "maximumBackoff": 600}))
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert got["RetryPolicy"] == '{"minimumBackoff":10,"maximumBackoff":600}'
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RetryPolicy": ""})
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert "RetryPolicy" not in got


@pytest.mark.parametrize(
    "policy",
    [
        '{"minimumBackoff":11,"maximumBackoff":10}',
        '{"minimumBackoff":10}',
        '{"minimumBackoff":1,"maximumBackoff":2,"jitter":1}',
        '{"minimumBackoff":true,"maximumBackoff":2}',
        "[1,2]",
        "nonsense",
    ],
)
def test_a_malformed_attribute_is_refused(
    sqs: Any, make_queue: Callable[..., str], policy: str
) -> None:
    with pytest.raises(ClientError) as exc:
        make_queue("q", RetryPolicy=policy)
    assert exc.value.response["Error"]["Code"].endswith(
        ("InvalidAttributeValue", "InvalidParameterValue")
    )
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName="q")


def test_visibility_zero_backs_off_on_the_wall_clock(
    sqs: Any, make_queue: Callable[..., str]
) -> None:
    # Given a queue whose retry policy holds a given-back message for 1 s
    url = make_queue("q", RetryPolicy=json.dumps({"minimumBackoff": 1, "maximumBackoff": 1}))
    sqs.send_message(QueueUrl=url, MessageBody="job")
    (m,) = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"]
    # When the consumer gives it back without a delay
    given_back = time.monotonic()
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
    )
    # A long poll receives it again, and not before the backoff has passed
    (again,) = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20)["Messages"]
    assert again["MessageId"] == m["MessageId"]
    assert time.monotonic() - given_back >= 1


def test_a_lapsed_visibility_timeout_backs_off_on_the_wall_clock(
    sqs: Any, make_queue: Callable[..., str]
) -> None:
    # Given a queue whose retry policy holds a message 1 s after its visibility timeout lapses
    url = make_queue("q", RetryPolicy=json.dumps({"minimumBackoff": 1, "maximumBackoff": 1}))
    sqs.send_message(QueueUrl=url, MessageBody="job")
    # When a consumer receives it for 1 s and neither deletes it nor gives it back
    received = time.monotonic()
    (m,) = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, VisibilityTimeout=1)["Messages"]
    # A long poll receives it again, and not before the timeout and the backoff have passed
    (again,) = sqs.receive_message(
        QueueUrl=url, WaitTimeSeconds=20, MessageSystemAttributeNames=["ApproximateReceiveCount"]
    )["Messages"]
    assert again["MessageId"] == m["MessageId"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    assert time.monotonic() - received >= 2
