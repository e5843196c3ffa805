"""One store transaction per request on the SQS face: a send checks its entries against the
queue's settings in the send's own transaction, none reads the queue first, and a batch that
changes or deletes messages runs its entries together, each failing alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deadletter.client import Client


def test_send_and_send_batch_run_one_transaction_each(
    sqs: Any, make_queue: Callable[..., str], counted: list[str]
) -> None:
    url = make_queue("one-tx")
    counted.clear()
    sqs.send_message(QueueUrl=url, MessageBody="a")
    assert counted == ["write"]
    counted.clear()
    answer = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": "ok", "MessageBody": "b"}, {"Id": "bad", "MessageBody": "\x00"}],
    )
    assert [e["Id"] for e in answer["Successful"]] == ["ok"]
    assert [e["Id"] for e in answer["Failed"]] == ["bad"]
    assert counted == ["write"]


def test_a_receive_reads_its_queue_only_when_it_must_wait_for_the_queues_time(
    sqs: Any, make_queue: Callable[..., str], counted: list[str]
) -> None:
    url = make_queue("one-tx-receive")
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": str(i)} for i in range(2)]
    )
    # Given a receive that finds messages, with or without its own WaitTimeSeconds
    counted.clear()
    assert len(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]) == 1
    assert len(sqs.receive_message(QueueUrl=url)["Messages"]) == 1
    # I expect each to be its claim alone
    assert counted == ["write", "write"]
    # and a receive that finds nothing and names no wait to read the queue's own wait (0)
    counted.clear()
    assert "Messages" not in sqs.receive_message(QueueUrl=url)
    assert counted == ["write", "read"]


def test_visibility_and_delete_batches_run_one_transaction_each(
    sqs: Any, make_queue: Callable[..., str], counted: list[str]
) -> None:
    url = make_queue("one-tx-batches")
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": b, "MessageBody": b} for b in ("a", "b", "c")]
    )
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3, VisibilityTimeout=300)
    held = {m["Body"]: m["ReceiptHandle"] for m in got["Messages"]}
    assert sorted(held) == ["a", "b", "c"]
    # Given c given back and received again: its first handle is stale
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=held["c"], VisibilityTimeout=0)
    (again,) = sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)["Messages"]
    assert again["Body"] == "c"
    # When one batch extends a, gives b back, and names c by its stale handle and garbage
    counted.clear()
    answer = sqs.change_message_visibility_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "longer", "ReceiptHandle": held["a"], "VisibilityTimeout": 600},
            {"Id": "back", "ReceiptHandle": held["b"], "VisibilityTimeout": 0},
            {"Id": "stale", "ReceiptHandle": held["c"], "VisibilityTimeout": 0},
            {"Id": "garbage", "ReceiptHandle": "not-a-handle", "VisibilityTimeout": 0},
        ],
    )
    # I expect one transaction, and each entry answered as it would be alone
    assert counted == ["write"]
    assert [e["Id"] for e in answer["Successful"]] == ["longer", "back"]
    assert [(e["Id"], e["Code"]) for e in answer["Failed"]] == [
        ("stale", "AWS.SimpleQueueService.MessageNotInflight"),
        ("garbage", "ReceiptHandleIsInvalid"),
    ]
    # and the stale entry to have written nothing: c is still held by its new handle
    (free,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3)["Messages"]
    assert free["Body"] == "b"
    # A delete batch is one transaction too
    counted.clear()
    answer = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "a", "ReceiptHandle": held["a"]},
            {"Id": "c", "ReceiptHandle": again["ReceiptHandle"]},
            {"Id": "garbage", "ReceiptHandle": "not-a-handle"},
        ],
    )
    assert counted == ["write"]
    assert [e["Id"] for e in answer["Successful"]] == ["a", "c"]
    assert [e["Id"] for e in answer["Failed"]] == ["garbage"]


def test_a_delete_batch_of_handles_of_several_consumer_tags_is_one_transaction(
    sqs: Any, make_queue: Callable[..., str], counted: list[str], server_url: str
) -> None:
    url = make_queue("one-tx-tags")
    with Client(server_url) as native:
        native.create_tag("one-tx-tags", "billing")
    sqs.send_message(QueueUrl=url, MessageBody="order")
    # Given the message received by the untagged consumers and by billing
    (mine,) = sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)["Messages"]
    (billing,) = sqs.receive_message(QueueUrl=url + ":billing", VisibilityTimeout=300)["Messages"]
    # When one batch deletes it with both handles
    counted.clear()
    answer = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "mine", "ReceiptHandle": mine["ReceiptHandle"]},
            {"Id": "billing", "ReceiptHandle": billing["ReceiptHandle"]},
        ],
    )
    # I expect one transaction, each entry done: everyone is done with it, so it is gone
    assert counted == ["write"]
    assert [e["Id"] for e in answer["Successful"]] == ["mine", "billing"]
    assert answer.get("Failed", []) == []
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
