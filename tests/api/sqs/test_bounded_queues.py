"""Bounded queues on the SQS face, in both wire protocols: `MaxMessages`, `MaxBytes` and
`Overflow` set by CreateQueue and SetQueueAttributes and read back; a send to a full queue
refused with OverLimit, and a batch refused entry by entry."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.api.sqs.conftest import arn


def _attributes(sqs: Any, url: str) -> dict[str, str]:
    got: dict[str, str] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])[
        "Attributes"
    ]
    return got


def test_the_attributes_are_kept_shown_and_removed(
    sqs: Any, make_queue: Callable[..., str]
) -> None:
    url = make_queue("q", MaxMessages="10", MaxBytes="1000", Overflow="reject-publish")
    got = _attributes(sqs, url)
    assert (got["MaxMessages"], got["MaxBytes"], got["Overflow"]) == (
        "10",
        "1000",
        "reject-publish",
    )
    asked = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Overflow"])["Attributes"]
    assert asked == {"Overflow": "reject-publish"}
    sqs.set_queue_attributes(
        QueueUrl=url, Attributes={"MaxMessages": "", "MaxBytes": "", "Overflow": "drop-head"}
    )
    assert not {"MaxMessages", "MaxBytes", "Overflow"} & set(_attributes(sqs, url))
    # An unbounded queue reads as on AWS.
    assert not {"MaxMessages", "MaxBytes", "Overflow"} & set(_attributes(sqs, make_queue("p")))


@pytest.mark.parametrize(
    "attributes",
    [{"MaxMessages": "0"}, {"MaxMessages": "ten"}, {"MaxBytes": "-1"}, {"Overflow": "drop"}],
)
def test_malformed_attributes_are_refused(
    sqs: Any, make_queue: Callable[..., str], attributes: dict[str, str]
) -> None:
    with pytest.raises(ClientError) as exc:
        make_queue("q", **attributes)
    assert exc.value.response["Error"]["Code"].endswith("InvalidAttributeValue")
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName="q")


def test_a_send_to_a_full_queue_is_refused_with_over_limit(
    sqs: Any, make_queue: Callable[..., str]
) -> None:
    url = make_queue("q", MaxMessages="1", Overflow="reject-publish")
    sqs.send_message(QueueUrl=url, MessageBody="a")
    with pytest.raises(ClientError) as exc:
        sqs.send_message(QueueUrl=url, MessageBody="b")
    error = exc.value.response["Error"]
    assert error["Code"].endswith("OverLimit")
    assert "is full" in error["Message"]
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert _attributes(sqs, url)["ApproximateNumberOfMessages"] == "1"


def test_a_batch_is_refused_entry_by_entry_and_dead_lettered(
    sqs: Any, make_queue: Callable[..., str]
) -> None:
    dlq = make_queue("dlq")
    policy = json.dumps({"deadLetterTargetArn": arn("dlq"), "maxReceiveCount": 3})
    url = make_queue("q", MaxMessages="2", Overflow="reject-publish-dlx", RedrivePolicy=policy)
    entries = [{"Id": f"e{i}", "MessageBody": f"m{i}"} for i in range(4)]
    result = sqs.send_message_batch(QueueUrl=url, Entries=entries)
    assert sorted(e["Id"] for e in result["Successful"]) == ["e0", "e1"]
    failed = sorted(result["Failed"], key=lambda e: e["Id"])
    assert [(e["Id"], e["Code"], e["SenderFault"]) for e in failed] == [
        ("e2", "OverLimit", True),
        ("e3", "OverLimit", True),
    ]
    assert _attributes(sqs, dlq)["ApproximateNumberOfMessages"] == "2"


def test_drop_head_moves_the_oldest_to_the_dlq(sqs: Any, make_queue: Callable[..., str]) -> None:
    dlq = make_queue("dlq")
    policy = json.dumps({"deadLetterTargetArn": arn("dlq"), "maxReceiveCount": 3})
    url = make_queue("q", MaxBytes="2", RedrivePolicy=policy)
    for body in ("a", "b", "c"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    (oldest,) = sqs.receive_message(QueueUrl=dlq, MessageAttributeNames=["All"])["Messages"]
    assert oldest["Body"] == "a"
    assert _attributes(sqs, url)["ApproximateNumberOfMessages"] == "2"
