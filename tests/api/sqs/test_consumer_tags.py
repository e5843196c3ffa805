"""Consumer tags through boto3: a queue URL ending in `:<tag>` receives for that tag, and its
receipt handles delete and change visibility for that tag, through either URL."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from deadletter.client import Client
from tests.api.sqs.conftest import arn


def test_each_tag_url_receives_every_message_once(
    sqs: Any, make_queue: Callable[..., str], server_url: str
) -> None:
    dlq = make_queue("orders-dlq")
    policy = json.dumps({"deadLetterTargetArn": arn("orders-dlq"), "maxReceiveCount": 1})
    url = make_queue("orders", RedrivePolicy=policy)
    with Client(server_url) as native:
        native.create_tag("orders", "billing")
        native.create_tag("orders", "shipping")
    sqs.send_message(QueueUrl=url, MessageBody="order-1")
    billing, shipping = url + ":billing", url + ":shipping"
    # billing receives it and gives it back: at its limit it is dead-lettered for billing,
    (got,) = sqs.receive_message(QueueUrl=billing, VisibilityTimeout=30)["Messages"]
    sqs.change_message_visibility(
        QueueUrl=billing, ReceiptHandle=got["ReceiptHandle"], VisibilityTimeout=0
    )
    assert "Messages" not in sqs.receive_message(QueueUrl=billing)
    dead = sqs.receive_message(QueueUrl=dlq, MessageAttributeNames=["All"])["Messages"]
    assert dead[0]["MessageAttributes"]["DLQ.sourceTag"]["StringValue"] == "billing"
    # while shipping receives it, and deletes it with the base URL: the handle names the tag.
    (got,) = sqs.receive_message(QueueUrl=shipping)["Messages"]
    assert got["Body"] == "order-1"
    sqs.delete_message(QueueUrl=url, ReceiptHandle=got["ReceiptHandle"])
    assert "Messages" not in sqs.receive_message(QueueUrl=shipping)
    # The queue's untagged consumers still have it.
    (got,) = sqs.receive_message(QueueUrl=url)["Messages"]
    sqs.delete_message_batch(
        QueueUrl=url, Entries=[{"Id": "1", "ReceiptHandle": got["ReceiptHandle"]}]
    )
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"


def test_a_tag_url_of_no_tag_is_a_queue_that_does_not_exist(
    sqs: Any, make_queue: Callable[..., str]
) -> None:
    url = make_queue("orders")
    with pytest.raises(ClientError) as caught:
        sqs.receive_message(QueueUrl=url + ":missing")
    assert "NonExistentQueue" in caught.value.response["Error"]["Code"]
