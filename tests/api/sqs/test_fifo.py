"""FIFO queues through boto3 (the JSON protocol) and the query protocol, on every store."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from tests.api.sqs.conftest import ACCOUNT, arn

NS = {"sqs": "http://queue.amazonaws.com/doc/2012-11-05/"}


def _fifo(sqs: Any, name: str, **attributes: str) -> str:
    url: str = sqs.create_queue(
        QueueName=name, Attributes={"FifoQueue": "true", "VisibilityTimeout": "30", **attributes}
    )["QueueUrl"]
    return url


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


def _receive(sqs: Any, url: str, n: int = 10) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=n, AttributeNames=["All"], WaitTimeSeconds=0
    ).get("Messages", [])
    return got


def test_a_fifo_queue_keeps_group_order_and_blocks_a_group_in_flight(sqs: Any) -> None:
    url = _fifo(sqs, "orders.fifo", ContentBasedDeduplication="true")
    sent = [
        sqs.send_message(QueueUrl=url, MessageBody=f"a{i}", MessageGroupId="a") for i in range(3)
    ]
    sqs.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": f"b{i}", "MessageBody": f"b{i}", "MessageGroupId": "b"} for i in range(2)],
    )
    numbers = [int(s["SequenceNumber"]) for s in sent]
    assert numbers == sorted(numbers) and all(len(s["SequenceNumber"]) >= 20 for s in sent)
    first = _receive(sqs, url, 1)
    assert [m["Body"] for m in first] == ["a0"]
    attributes = first[0]["Attributes"]
    assert attributes["MessageGroupId"] == "a"
    assert attributes["SequenceNumber"] == sent[0]["SequenceNumber"]
    assert attributes["MessageDeduplicationId"]
    # Group a is blocked while a0 is in flight; group b is not.
    assert [m["Body"] for m in _receive(sqs, url)] == ["b0", "b1"]
    assert _receive(sqs, url) == []
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first[0]["ReceiptHandle"])
    again = _receive(sqs, url)
    assert [m["Body"] for m in again] == ["a1", "a2"]
    # Given back, a1 comes first again, once a2 is done.
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=again[0]["ReceiptHandle"], VisibilityTimeout=0
    )
    assert _receive(sqs, url) == []
    sqs.delete_message(QueueUrl=url, ReceiptHandle=again[1]["ReceiptHandle"])
    assert [m["Body"] for m in _receive(sqs, url)] == ["a1"]


def test_deduplication_answers_with_the_first_message(sqs: Any) -> None:
    url = _fifo(sqs, "dedup.fifo")
    first = sqs.send_message(
        QueueUrl=url, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="d1"
    )
    again = sqs.send_message(
        QueueUrl=url, MessageBody="y", MessageGroupId="g", MessageDeduplicationId="d1"
    )
    assert again["MessageId"] == first["MessageId"]
    assert again["SequenceNumber"] == first["SequenceNumber"]
    assert [m["Body"] for m in _receive(sqs, url)] == ["x"]
    with pytest.raises(ClientError) as exc:
        sqs.send_message(QueueUrl=url, MessageBody="z", MessageGroupId="g")
    assert _code(exc) == "InvalidParameterValue"


def test_what_a_fifo_queue_refuses(sqs: Any) -> None:
    url = _fifo(sqs, "strict.fifo", ContentBasedDeduplication="true")
    with pytest.raises(ClientError) as exc:
        sqs.send_message(QueueUrl=url, MessageBody="x")
    assert _code(exc) == "MissingParameter"
    with pytest.raises(ClientError) as exc:
        sqs.send_message(QueueUrl=url, MessageBody="x", MessageGroupId="g", DelaySeconds=5)
    assert _code(exc) == "InvalidParameterValue"
    result = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "ok", "MessageBody": "x", "MessageGroupId": "g"},
            {"Id": "nogroup", "MessageBody": "y"},
        ],
    )
    assert [e["Id"] for e in result["Successful"]] == ["ok"]
    assert [(e["Id"], e["Code"]) for e in result["Failed"]] == [("nogroup", "MissingParameter")]


@pytest.mark.parametrize(
    ("name", "attributes", "code"),
    [
        ("plain", {"FifoQueue": "true"}, "InvalidParameterValue"),
        ("named.fifo", {}, "InvalidParameterValue"),
        ("named.fifo", {"FifoQueue": "false"}, "InvalidParameterValue"),
        ("plain", {"ContentBasedDeduplication": "true"}, "InvalidAttributeName"),
        ("x.fifo", {"FifoQueue": "true", "DeduplicationScope": "group"}, "InvalidAttributeValue"),
        (
            "x.fifo",
            {"FifoQueue": "true", "FifoThroughputLimit": "perMessageGroupId"},
            "InvalidParameterValue",
        ),
    ],
)
def test_fifo_names_and_attributes_are_checked(
    sqs: Any, name: str, attributes: dict[str, str], code: str
) -> None:
    with pytest.raises(ClientError) as exc:
        sqs.create_queue(QueueName=name, Attributes=attributes)
    assert _code(exc) == code


def test_fifo_attributes_are_shown_and_high_throughput_accepted(sqs: Any) -> None:
    high = {"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}
    url = _fifo(sqs, "fast.fifo", **high)
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert got["FifoQueue"] == "true"
    assert got["ContentBasedDeduplication"] == "false"
    assert {k: got[k] for k in high} == high
    assert got["MaximumMessageSize"] == "1048576"
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"ContentBasedDeduplication": "true"})
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ContentBasedDeduplication"])
    assert got["Attributes"] == {"ContentBasedDeduplication": "true"}
    # CreateQueue stays idempotent, and a standard queue shows no FIFO attributes.
    assert _fifo(sqs, "fast.fifo", **high) == url
    plain = sqs.create_queue(QueueName="plain", Attributes={"FifoQueue": "false"})["QueueUrl"]
    assert (
        "FifoQueue"
        not in sqs.get_queue_attributes(QueueUrl=plain, AttributeNames=["All"])["Attributes"]
    )
    with pytest.raises(ClientError) as exc:
        sqs.set_queue_attributes(QueueUrl=plain, Attributes={"FifoQueue": "true"})
    assert _code(exc) == "InvalidAttributeValue"


def test_a_dlq_has_its_source_type(sqs: Any) -> None:
    _fifo(sqs, "dlq.fifo")
    sqs.create_queue(QueueName="dlq")
    fifo_policy = json.dumps({"deadLetterTargetArn": arn("dlq.fifo"), "maxReceiveCount": 1})
    standard_policy = json.dumps({"deadLetterTargetArn": arn("dlq"), "maxReceiveCount": 1})
    with pytest.raises(ClientError) as exc:
        sqs.create_queue(QueueName="src", Attributes={"RedrivePolicy": fifo_policy})
    assert _code(exc) == "InvalidParameterValue"
    with pytest.raises(ClientError) as exc:
        _fifo(sqs, "src.fifo", RedrivePolicy=standard_policy)
    assert _code(exc) == "InvalidParameterValue"


def test_dead_lettering_and_a_move_task_keep_group_order(sqs: Any) -> None:
    dlq = _fifo(sqs, "dead.fifo", ContentBasedDeduplication="true")
    policy = json.dumps({"deadLetterTargetArn": arn("dead.fifo"), "maxReceiveCount": 1})
    url = _fifo(sqs, "work.fifo", ContentBasedDeduplication="true", RedrivePolicy=policy)
    bodies = [f"m{i}" for i in range(4)]
    sqs.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": b, "MessageBody": b, "MessageGroupId": "g"} for b in bodies],
    )
    # Each received once and given back: the next receive moves them to the DLQ in order.
    for m in _receive(sqs, url):
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
        )
    assert _receive(sqs, url) == []
    dead = _receive(sqs, dlq)
    assert [m["Body"] for m in dead] == bodies
    assert {m["Attributes"]["MessageGroupId"] for m in dead} == {"g"}
    for m in dead:
        sqs.change_message_visibility(
            QueueUrl=dlq, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
        )
    sqs.start_message_move_task(SourceArn=arn("dead.fifo"))
    moved: list[str] = []
    for _ in range(60):  # the task moves them in the background, perhaps in several steps
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1, MaxNumberOfMessages=10)
        for m in got.get("Messages", []):
            moved.append(m["Body"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        if len(moved) >= len(bodies):
            break
    assert moved == bodies


def _call(url: str, path: str = "/", **fields: str) -> ET.Element:
    r = httpx.post(f"{url}{path}", data={"Version": "2012-11-05", **fields}, timeout=10)
    assert r.status_code == 200, r.text
    return ET.fromstring(r.text)


def test_the_query_protocol_speaks_fifo(server_url: str) -> None:
    _call(
        server_url,
        Action="CreateQueue",
        QueueName="legacy.fifo",
        **{"Attribute.1.Name": "FifoQueue", "Attribute.1.Value": "true"},
    )
    path = f"/{ACCOUNT}/legacy.fifo"
    root = _call(
        server_url,
        path,
        Action="SendMessage",
        MessageBody="one",
        MessageGroupId="g",
        MessageDeduplicationId="d1",
    )
    number = root.findtext("sqs:SendMessageResult/sqs:SequenceNumber", namespaces=NS)
    assert number and len(number) >= 20
    _call(
        server_url,
        path,
        Action="SendMessageBatch",
        **{
            "SendMessageBatchRequestEntry.1.Id": "e1",
            "SendMessageBatchRequestEntry.1.MessageBody": "two",
            "SendMessageBatchRequestEntry.1.MessageGroupId": "g",
            "SendMessageBatchRequestEntry.1.MessageDeduplicationId": "d2",
        },
    )
    root = _call(
        server_url, path, Action="ReceiveMessage", MaxNumberOfMessages="10",
        **{"AttributeName.1": "All"},
    )  # fmt: skip
    messages = root.findall("sqs:ReceiveMessageResult/sqs:Message", NS)
    assert [m.findtext("sqs:Body", namespaces=NS) for m in messages] == ["one", "two"]
    attributes = {
        a.findtext("sqs:Name", namespaces=NS): a.findtext("sqs:Value", namespaces=NS)
        for a in messages[0].findall("sqs:Attribute", NS)
    }
    assert attributes["MessageGroupId"] == "g"
    assert attributes["SequenceNumber"] == number
    r = httpx.post(
        f"{server_url}{path}",
        data={"Version": "2012-11-05", "Action": "SendMessage", "MessageBody": "x"},
        timeout=10,
    )
    assert r.status_code == 400 and "<Code>MissingParameter</Code>" in r.text
