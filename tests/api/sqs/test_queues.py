"""Queue actions through boto3: create, find, list, attributes, tags, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.api.sqs.conftest import ACCOUNT, arn, client


def test_create_queue_returns_a_url_on_the_request_host(sqs: Any, server_url: str) -> None:
    url = sqs.create_queue(QueueName="orders")["QueueUrl"]
    assert url == f"{server_url}/{ACCOUNT}/orders"
    assert sqs.get_queue_url(QueueName="orders")["QueueUrl"] == url


def test_create_queue_is_idempotent_with_the_same_attributes(sqs: Any) -> None:
    first = sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "45"})
    again = sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "45"})
    assert first["QueueUrl"] == again["QueueUrl"]
    with pytest.raises(ClientError) as exc:
        sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "46"})
    assert exc.value.response["Error"]["Code"] == "QueueAlreadyExists"


def test_missing_queue_raises_queue_does_not_exist(sqs: Any, server_url: str) -> None:
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName="nope")
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.send_message(QueueUrl=f"{server_url}/{ACCOUNT}/nope", MessageBody="x")


def test_list_queues_by_prefix_and_pages(sqs: Any) -> None:
    for name in ("a-1", "a-2", "a-3", "b-1"):
        sqs.create_queue(QueueName=name)
    assert [u.rsplit("/", 1)[1] for u in sqs.list_queues(QueueNamePrefix="a-")["QueueUrls"]] == [
        "a-1",
        "a-2",
        "a-3",
    ]
    page = sqs.list_queues(MaxResults=2)
    assert len(page["QueueUrls"]) == 2
    rest = sqs.list_queues(MaxResults=2, NextToken=page["NextToken"])
    names = [u.rsplit("/", 1)[1] for u in page["QueueUrls"] + rest["QueueUrls"]]
    assert names == ["a-1", "a-2", "a-3", "b-1"]
    assert "NextToken" not in rest


def test_delete_queue(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="gone")["QueueUrl"]
    sqs.delete_queue(QueueUrl=url)
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName="gone")


def test_attributes_round_trip(sqs: Any, make_queue: Any) -> None:
    url = make_queue(
        "orders",
        VisibilityTimeout="40",
        MessageRetentionPeriod="600",
        DelaySeconds="2",
        MaximumMessageSize="2048",
        ReceiveMessageWaitTimeSeconds="3",
        Policy='{"Version": "2012-10-17"}',
    )
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert got["VisibilityTimeout"] == "40"
    assert got["MessageRetentionPeriod"] == "600"
    assert got["DelaySeconds"] == "2"
    assert got["MaximumMessageSize"] == "2048"
    assert got["ReceiveMessageWaitTimeSeconds"] == "3"
    assert got["Policy"] == '{"Version": "2012-10-17"}'
    assert got["QueueArn"] == arn("orders")
    assert int(got["CreatedTimestamp"]) > 1_600_000_000
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "5"})
    one = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
    assert one["Attributes"] == {"VisibilityTimeout": "5"}


def test_message_counts(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders")
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)]
    )
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=60)
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert got["ApproximateNumberOfMessages"] == "2"
    assert got["ApproximateNumberOfMessagesNotVisible"] == "1"
    assert got["ApproximateNumberOfMessagesDelayed"] == "1"


@pytest.mark.parametrize(
    ("attributes", "code"),
    [
        ({"VisibilityTimeout": "43201"}, "InvalidAttributeValue"),
        ({"MessageRetentionPeriod": "10"}, "InvalidAttributeValue"),
        ({"DelaySeconds": "soon"}, "InvalidAttributeValue"),
        ({"NoSuchAttribute": "1"}, "InvalidAttributeName"),
        ({"RedrivePolicy": "{not json"}, "InvalidAttributeValue"),
    ],
)
def test_bad_attributes_are_refused(sqs: Any, attributes: dict[str, str], code: str) -> None:
    with pytest.raises(ClientError) as exc:
        sqs.create_queue(QueueName="bad", Attributes=attributes)
    assert exc.value.response["Error"]["Code"] == code
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName="bad")


def test_bad_queue_names_are_refused(sqs: Any) -> None:
    with pytest.raises(ClientError) as exc:
        sqs.create_queue(QueueName="has space")
    assert exc.value.response["Error"]["Code"] == "InvalidParameterValue"
    # A .fifo name is a FIFO queue's (tests/api/sqs/test_fifo.py has the rest).
    with pytest.raises(ClientError) as exc:
        sqs.create_queue(QueueName="orders.fifo")
    assert exc.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_queue_labels_through_tag_queue_and_list_queue_tags(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="tagged", tags={"team": "payments"})["QueueUrl"]
    sqs.tag_queue(QueueUrl=url, Tags={"env": "test"})
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "payments", "env": "test"}
    sqs.untag_queue(QueueUrl=url, TagKeys=["team"])
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"env": "test"}


def test_a_bare_queue_name_is_accepted_as_queue_url(sqs: Any, make_queue: Any) -> None:
    make_queue("orders")
    sqs.send_message(QueueUrl="orders", MessageBody="hello")
    assert sqs.receive_message(QueueUrl="orders")["Messages"][0]["Body"] == "hello"


def test_region_comes_from_the_credential_scope(server_url: str) -> None:
    import boto3

    eu = boto3.client(
        "sqs",
        endpoint_url=server_url,
        region_name="eu-west-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    url = eu.create_queue(QueueName="regional")["QueueUrl"]
    got = eu.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    assert got["QueueArn"] == f"arn:aws:sqs:eu-west-1:{ACCOUNT}:regional"


def test_a_twelve_digit_access_key_is_the_account(server_url: str) -> None:
    import boto3

    other = boto3.client(
        "sqs",
        endpoint_url=server_url,
        region_name="us-east-1",
        aws_access_key_id="111122223333",
        aws_secret_access_key="test",
    )
    url = other.create_queue(QueueName="mine")["QueueUrl"]
    assert "/111122223333/mine" in url
    default = client(server_url)
    with pytest.raises(default.exceptions.QueueDoesNotExist):
        default.get_queue_url(QueueName="mine")


def test_redrive_policy_attribute(sqs: Any, make_queue: Any) -> None:
    make_queue("orders-dlq")
    policy = {"deadLetterTargetArn": arn("orders-dlq"), "maxReceiveCount": "4"}
    url = make_queue("orders", RedrivePolicy=json.dumps(policy))
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])
    assert json.loads(got["Attributes"]["RedrivePolicy"]) == {
        "deadLetterTargetArn": arn("orders-dlq"),
        "maxReceiveCount": 4,
    }
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": ""})
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert "RedrivePolicy" not in got
