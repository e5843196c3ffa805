"""The query protocol (form fields in, XML out), as older SDKs and curl speak it."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import httpx
import pytest

from tests.api.sqs.conftest import ACCOUNT

# Parsing form fields and writing XML happen in the face, before and after the engine; the
# engine's behaviour on each store is tested in the JSON protocol (tests/README.md).
pytestmark = pytest.mark.one_store

NS = {"sqs": "http://queue.amazonaws.com/doc/2012-11-05/"}


def _call(url: str, path: str = "/", **fields: str) -> tuple[int, ET.Element]:
    r = httpx.post(f"{url}{path}", data={"Version": "2012-11-05", **fields}, timeout=10)
    assert r.headers["content-type"].startswith("text/xml")
    return r.status_code, ET.fromstring(r.text)


def _text(root: ET.Element, path: str) -> str:
    found = root.find(path, NS)
    assert found is not None, f"{path} not in {ET.tostring(root).decode()}"
    return found.text or ""


def test_queue_and_message_round_trip(server_url: str) -> None:
    status, root = _call(
        server_url,
        Action="CreateQueue",
        QueueName="legacy",
        **{"Attribute.1.Name": "VisibilityTimeout", "Attribute.1.Value": "0"},
    )
    assert status == 200
    queue_url = _text(root, "sqs:CreateQueueResult/sqs:QueueUrl")
    assert queue_url == f"{server_url}/{ACCOUNT}/legacy"

    status, root = _call(
        server_url,
        f"/{ACCOUNT}/legacy",  # posted to the queue's URL, without a QueueUrl field
        Action="SendMessage",
        MessageBody="hello <xml> & friends",
        **{
            "MessageAttribute.1.Name": "tenant",
            "MessageAttribute.1.Value.DataType": "String",
            "MessageAttribute.1.Value.StringValue": "acme",
        },
    )
    assert status == 200
    assert _text(root, "sqs:SendMessageResult/sqs:MD5OfMessageBody")

    status, root = _call(
        server_url,
        Action="ReceiveMessage",
        QueueUrl=queue_url,
        **{"AttributeName.1": "All", "MessageAttributeName.1": "All"},
    )
    message = root.find("sqs:ReceiveMessageResult/sqs:Message", NS)
    assert message is not None
    assert _text(message, "sqs:Body") == "hello <xml> & friends"
    attributes = {
        _text(a, "sqs:Name"): _text(a, "sqs:Value") for a in message.findall("sqs:Attribute", NS)
    }
    assert attributes["ApproximateReceiveCount"] == "1"
    user = message.find("sqs:MessageAttribute", NS)
    assert user is not None
    assert _text(user, "sqs:Name") == "tenant"
    assert _text(user, "sqs:Value/sqs:StringValue") == "acme"

    status, root = _call(server_url, Action="ListQueues")
    urls = [e.text for e in root.findall("sqs:ListQueuesResult/sqs:QueueUrl", NS)]
    assert urls == [queue_url]

    status, root = _call(
        server_url,
        Action="DeleteMessage",
        QueueUrl=queue_url,
        ReceiptHandle=_text(message, "sqs:ReceiptHandle"),
    )
    assert status == 200


def test_batch_entries(server_url: str) -> None:
    _call(server_url, Action="CreateQueue", QueueName="batch")
    status, root = _call(
        server_url,
        f"/{ACCOUNT}/batch",
        Action="SendMessageBatch",
        **{
            "SendMessageBatchRequestEntry.1.Id": "one",
            "SendMessageBatchRequestEntry.1.MessageBody": "1",
            "SendMessageBatchRequestEntry.2.Id": "two",
            "SendMessageBatchRequestEntry.2.MessageBody": "2",
            "SendMessageBatchRequestEntry.2.DelaySeconds": "9999",
        },
    )
    assert status == 200
    ok = root.findall("sqs:SendMessageBatchResult/sqs:SendMessageBatchResultEntry", NS)
    failed = root.findall("sqs:SendMessageBatchResult/sqs:BatchResultErrorEntry", NS)
    assert [_text(e, "sqs:Id") for e in ok] == ["one"]
    assert [_text(e, "sqs:Id") for e in failed] == ["two"]
    assert _text(failed[0], "sqs:SenderFault") == "true"


def test_errors_are_error_responses(server_url: str) -> None:
    status, root = _call(server_url, Action="GetQueueUrl", QueueName="nope")
    assert status == 400
    assert _text(root, "sqs:Error/sqs:Code") == "AWS.SimpleQueueService.NonExistentQueue"
    assert _text(root, "sqs:Error/sqs:Type") == "Sender"
    status, root = _call(server_url, Action="Frobnicate")
    assert status == 400
    assert _text(root, "sqs:Error/sqs:Code") == "InvalidAction"
    status, root = _call(server_url, Action="CreateQueue")
    assert _text(root, "sqs:Error/sqs:Code") == "MissingParameter"
