"""What other clients and SQS test suites send, answered as AWS answers it: attribute names with
whitespace around them, every spelling of a query-protocol list (newer SDKs send
`MessageSystemAttributeNames` instead of `AttributeNames`), queue URLs whose host names
another region, and policies read back as AWS's compact JSON."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import httpx
import pytest

from tests.api.sqs.conftest import ACCOUNT, arn, client
from tests.support.sqs_query import SQS_NAMESPACE

OTHER = "eu-west-1"
SYSTEM = ["SenderId", "SentTimestamp", "MessageGroupId"]


def test_attribute_names_are_taken_without_surrounding_whitespace(sqs: Any) -> None:
    # Given a queue created and changed with names padded by spaces,
    url = sqs.create_queue(QueueName="padded", Attributes={" VisibilityTimeout ": "40"})["QueueUrl"]
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"DelaySeconds\t": "0"})
    # they set the attributes so named, and padded names ask for them
    asked = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=[" VisibilityTimeout", "DelaySeconds "]
    )
    assert asked["Attributes"] == {"VisibilityTimeout": "40", "DelaySeconds": "0"}
    # as they ask for a message's system and user attributes
    sqs.send_message(
        QueueUrl=url,
        MessageBody="m",
        MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}},
    )
    (got,) = sqs.receive_message(
        QueueUrl=url, MessageSystemAttributeNames=[" SenderId "], MessageAttributeNames=[" k"]
    )["Messages"]
    assert list(got["Attributes"]) == ["SenderId"] and list(got["MessageAttributes"]) == ["k"]
    # and a padded name repeated at creation is the same attribute, not another value.
    again = sqs.create_queue(QueueName="padded", Attributes={"VisibilityTimeout  ": "40"})
    assert again["QueueUrl"] == url


def test_message_system_attribute_names_return_system_attributes(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="sys.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="m", MessageGroupId="g", MessageDeduplicationId="d")
    (got,) = sqs.receive_message(QueueUrl=url, MessageSystemAttributeNames=SYSTEM)["Messages"]
    assert sorted(got["Attributes"]) == sorted(SYSTEM)
    assert got["Attributes"]["MessageGroupId"] == "g"
    assert got["Attributes"]["SenderId"] == ACCOUNT


@pytest.mark.parametrize(
    "spelling",
    [
        "MessageSystemAttributeName.{n}",  # the model's flattened name
        "MessageSystemAttributeNames.{n}",  # flattened, under the member's own name
        "MessageSystemAttributeNames.member.{n}",  # a list that is not flattened
        "AttributeName.{n}",
        "AttributeNames.member.{n}",
    ],
)
def test_every_query_spelling_of_a_name_list_is_read(server_url: str, spelling: str) -> None:
    url = f"{server_url}/{ACCOUNT}/spelt.fifo"
    base = {"Version": "2012-11-05"}
    httpx.post(server_url, data={**base, "Action": "CreateQueue", "QueueName": "spelt.fifo",
               "Attribute.1.Name": "FifoQueue", "Attribute.1.Value": "true"})  # fmt: skip
    httpx.post(url, data={**base, "Action": "SendMessage", "MessageBody": "m",
               "MessageGroupId": "g", "MessageDeduplicationId": "d"})  # fmt: skip
    names = {spelling.format(n=n): name for n, name in enumerate(SYSTEM, 1)}
    r = httpx.post(url, data={**base, "Action": "ReceiveMessage", **names})
    assert r.status_code == 200, r.text
    ns = {"sqs": SQS_NAMESPACE}
    shown = [e.text for e in ET.fromstring(r.text).findall(".//sqs:Attribute/sqs:Name", ns)]
    assert sorted(shown) == sorted(SYSTEM)


@pytest.mark.parametrize(
    "host",
    [f"https://sqs.{OTHER}.amazonaws.com", f"https://{OTHER}.queue.amazonaws.com"],
    ids=["regional", "legacy"],
)
def test_a_url_whose_host_names_a_region_acts_in_that_region(
    server_url: str, protocol: str, host: str
) -> None:
    # Given a queue "orders" in each of two regions,
    home = client(server_url, protocol=protocol)
    abroad = client(server_url, protocol=protocol, region_name=OTHER)
    home.create_queue(QueueName="orders")
    abroad.create_queue(QueueName="orders")
    # a home-region client sending to the URL AWS gives the other region's queue
    home.send_message(QueueUrl=f"{host}/{ACCOUNT}/orders", MessageBody="to eu")
    # sends to that queue, as on AWS where the host is the region's endpoint.
    got = abroad.receive_message(QueueUrl="orders")["Messages"]
    assert [m["Body"] for m in got] == ["to eu"]
    assert "Messages" not in home.receive_message(QueueUrl="orders")
    # The home region's own AWS host is the home region.
    home.send_message(QueueUrl=f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/orders",
                      MessageBody="home")  # fmt: skip
    assert [m["Body"] for m in home.receive_message(QueueUrl="orders")["Messages"]] == ["home"]


def test_policies_read_back_as_compact_json(sqs: Any) -> None:
    # Given policies written with spaces, as json.dumps writes them,
    sqs.create_queue(QueueName="dlq")
    policy = {"deadLetterTargetArn": arn("dlq"), "maxReceiveCount": "3"}
    allow = {"redrivePermission": "byQueue", "sourceQueueArns": [arn("src")]}
    url = sqs.create_queue(QueueName="src", Attributes={"RedrivePolicy": json.dumps(policy)})[
        "QueueUrl"
    ]
    sqs.set_queue_attributes(
        QueueUrl=sqs.get_queue_url(QueueName="dlq")["QueueUrl"],
        Attributes={"RedriveAllowPolicy": json.dumps(allow)},
    )
    # they read back as AWS writes them: no spaces, the count a number
    src = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])
    assert src["Attributes"]["RedrivePolicy"] == (
        f'{{"deadLetterTargetArn":"{arn("dlq")}","maxReceiveCount":3}}'
    )
    dlq = sqs.get_queue_attributes(QueueUrl="dlq", AttributeNames=["RedriveAllowPolicy"])
    assert dlq["Attributes"]["RedriveAllowPolicy"] == (
        f'{{"redrivePermission":"byQueue","sourceQueueArns":["{arn("src")}"]}}'
    )
    # and creating the queue again with either spelling is the same queue.
    for text in (json.dumps(policy), src["Attributes"]["RedrivePolicy"]):
        assert (
            sqs.create_queue(QueueName="src", Attributes={"RedrivePolicy": text})["QueueUrl"] == url
        )
