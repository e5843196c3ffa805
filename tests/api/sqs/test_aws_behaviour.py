"""What AWS SQS code and test suites rely on, through boto3 in both wire protocols (JSON and
query) on each store: request ids, message attribute wildcards, the trace header as a system
attribute, UntagQueue's refusal of no keys."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

SQS_NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/"
TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


@pytest.fixture
def aws(sqs: Any) -> Any:
    """A boto3 SQS client in one wire protocol."""
    return sqs


@pytest.fixture
def queue(aws: Any) -> Callable[[str], str]:
    def make(name: str) -> str:
        url: str = aws.create_queue(QueueName=name)["QueueUrl"]
        return url

    return make


def _is_uuid(text: str) -> bool:
    return str(uuid.UUID(text)) == text


# 1. Request ids ----------------------------------------------------------------------------


def test_every_answer_carries_a_request_id(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("ids")
    first = aws.send_message(QueueUrl=url, MessageBody="x")["ResponseMetadata"]
    second = aws.get_queue_url(QueueName="ids")["ResponseMetadata"]
    for meta in (first, second):
        assert _is_uuid(meta["RequestId"])
        assert meta["HTTPHeaders"]["x-amzn-requestid"] == meta["RequestId"]
    assert first["RequestId"] != second["RequestId"]


def test_an_error_carries_a_request_id(aws: Any) -> None:
    with pytest.raises(ClientError) as caught:
        aws.get_queue_url(QueueName="absent")
    meta = caught.value.response["ResponseMetadata"]
    assert _is_uuid(meta["RequestId"])
    assert meta["HTTPHeaders"]["x-amzn-requestid"] == meta["RequestId"]


def test_the_xml_request_id_is_the_header_s(server_url: str) -> None:
    for fields in ({"Action": "ListQueues"}, {"Action": "GetQueueUrl", "QueueName": "absent"}):
        r = httpx.post(server_url, data={"Version": "2012-11-05", **fields}, timeout=10)
        assert f"<RequestId>{r.headers['x-amzn-requestid']}</RequestId>" in r.text


# 2. MessageAttributeNames wildcards ----------------------------------------------------------


def _string(value: str) -> dict[str, str]:
    return {"DataType": "String", "StringValue": value}


@pytest.mark.parametrize(
    ("asked", "shown"),
    [
        (["All"], {"order.id", "order.kind", "orderly", "tenant"}),
        ([".*"], {"order.id", "order.kind", "orderly", "tenant"}),
        (["order.*"], {"order.id", "order.kind"}),
        (["order.*", "tenant"], {"order.id", "order.kind", "tenant"}),
        (["absent.*"], set()),
    ],
)
def test_message_attribute_names_take_wildcards(
    aws: Any, queue: Callable[[str], str], asked: list[str], shown: set[str]
) -> None:
    url = queue("wild")
    names = ("order.id", "order.kind", "orderly", "tenant")
    aws.send_message(
        QueueUrl=url, MessageBody="x", MessageAttributes={n: _string(n) for n in names}
    )
    (message,) = aws.receive_message(QueueUrl=url, MessageAttributeNames=asked)["Messages"]
    got = message.get("MessageAttributes", {})
    assert set(got) == shown
    assert all(got[n] == _string(n) for n in shown)
    assert ("MD5OfMessageAttributes" in message) == bool(shown)


# 3. AWSTraceHeader ---------------------------------------------------------------------------

TRACE_ATTRIBUTE = {"AWSTraceHeader": _string(TRACE)}


def _receive(aws: Any, url: str, **asked: list[str]) -> dict[str, Any]:
    (message,) = aws.receive_message(
        QueueUrl=url, MessageAttributeNames=["All"], VisibilityTimeout=0, **asked
    )["Messages"]
    return dict(message)


def test_the_trace_header_is_a_system_attribute(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("traced")
    sent = aws.send_message(
        QueueUrl=url,
        MessageBody="x",
        MessageAttributes={"tenant": _string("acme")},
        MessageSystemAttributes=TRACE_ATTRIBUTE,
    )
    assert sent["MD5OfMessageSystemAttributes"]
    for asked in (
        {"MessageSystemAttributeNames": ["AWSTraceHeader"]},
        {"MessageSystemAttributeNames": ["All"]},
        {"AttributeNames": ["All"]},
        {"AttributeNames": ["AWSTraceHeader"]},
    ):
        message = _receive(aws, url, **asked)
        assert message["Attributes"]["AWSTraceHeader"] == TRACE
        assert message["MessageAttributes"] == {"tenant": _string("acme")}
        assert message["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]
    assert "Attributes" not in _receive(aws, url)
    message = _receive(aws, url, MessageSystemAttributeNames=["SentTimestamp"])
    assert "AWSTraceHeader" not in message["Attributes"]


def test_the_trace_header_alone_is_no_message_attribute(
    aws: Any, queue: Callable[[str], str]
) -> None:
    url = queue("trace-only")
    sent = aws.send_message(QueueUrl=url, MessageBody="x", MessageSystemAttributes=TRACE_ATTRIBUTE)
    assert "MD5OfMessageAttributes" not in sent
    message = _receive(aws, url, AttributeNames=["All"])
    assert "MessageAttributes" not in message
    assert message["Attributes"]["AWSTraceHeader"] == TRACE


def test_a_batch_carries_trace_headers(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("traced-batch")
    result = aws.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": "a", "MessageBody": "x", "MessageSystemAttributes": TRACE_ATTRIBUTE}],
    )
    assert [e["Id"] for e in result["Successful"]] == ["a"]
    assert _receive(aws, url, AttributeNames=["All"])["Attributes"]["AWSTraceHeader"] == TRACE


@pytest.mark.parametrize(
    "system",
    [
        {"SentTimestamp": _string("1")},
        {"AWSTraceHeader": {"DataType": "Number", "StringValue": "1"}},
    ],
)
def test_other_system_attributes_are_refused(
    aws: Any, queue: Callable[[str], str], system: dict[str, Any]
) -> None:
    url = queue("untraced")
    with pytest.raises(ClientError) as caught:
        aws.send_message(QueueUrl=url, MessageBody="x", MessageSystemAttributes=system)
    assert caught.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_the_stored_name_cannot_be_sent(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("spoof")
    with pytest.raises(ClientError) as caught:
        aws.send_message(
            QueueUrl=url, MessageBody="x", MessageAttributes={"aws.AWSTraceHeader": _string("y")}
        )
    assert caught.value.response["Error"]["Code"] == "InvalidParameterValue"


# 4. UntagQueue -------------------------------------------------------------------------------


def test_untag_with_no_keys_is_refused(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("tagged")
    aws.tag_queue(QueueUrl=url, Tags={"team": "core"})
    with pytest.raises(ClientError) as caught:
        aws.untag_queue(QueueUrl=url, TagKeys=[])
    assert caught.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert aws.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "core"}
    aws.untag_queue(QueueUrl=url, TagKeys=["team"])
    assert "Tags" not in aws.list_queue_tags(QueueUrl=url)


def test_an_empty_receive_has_no_messages(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("empty")
    result = aws.receive_message(QueueUrl=url, WaitTimeSeconds=0)
    assert "Messages" not in result
    assert _is_uuid(result["ResponseMetadata"]["RequestId"])
