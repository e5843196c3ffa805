"""The dead-letter lifecycle through SQS: redrive policy, the move, move tasks."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from deadletter.domain.provenance import ErrorDetails
from tests.api.sqs.conftest import arn


def _policy(dlq: str, count: int) -> str:
    return json.dumps({"deadLetterTargetArn": arn(dlq), "maxReceiveCount": count})


def _fail(sqs: Any, url: str, times: int) -> None:
    """Receive and give back (visibility 0) `times` times."""
    for _ in range(times):
        got = sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)
        assert "Messages" in got


def _wait_task(sqs: Any, dlq: str, status: str, timeout: float = 60) -> dict[str, Any]:
    """The DLQ's newest move task once it has `status`; fails past the deadline, which is
    there for a hung task, not for a slow machine."""
    deadline = time.monotonic() + timeout
    while True:
        task: dict[str, Any] = sqs.list_message_move_tasks(SourceArn=arn(dlq))["Results"][0]
        if task["Status"] == status:
            return task
        assert time.monotonic() < deadline, f"the move task is still {task['Status']}"
        time.sleep(0.05)


def test_moved_on_the_receive_that_would_exceed_max_receive_count(
    sqs: Any, make_queue: Any
) -> None:
    dlq = make_queue("orders-dlq")
    url = make_queue("orders", RedrivePolicy=_policy("orders-dlq", 2))
    sent = sqs.send_message(QueueUrl=url, MessageBody="poison")["MessageId"]
    _fail(sqs, url, 2)
    assert "Messages" not in sqs.receive_message(QueueUrl=url)  # the third attempt moves it
    # (or the sweep is moving it at that moment, its row locked: a long poll sees it arrive)
    got = sqs.receive_message(QueueUrl=dlq, AttributeNames=["All"], WaitTimeSeconds=5)["Messages"]
    assert len(got) == 1
    m = got[0]
    assert m["Body"] == "poison"
    assert m["MessageId"] == sent
    # The move keeps the receive count; this receive from the DLQ adds one.
    assert m["Attributes"]["ApproximateReceiveCount"] == "3"
    assert m["Attributes"]["DeadLetterQueueSourceArn"] == arn("orders")


def test_list_dead_letter_source_queues(sqs: Any, make_queue: Any) -> None:
    dlq = make_queue("dlq")
    make_queue("a", RedrivePolicy=_policy("dlq", 3))
    make_queue("b", RedrivePolicy=_policy("dlq", 3))
    make_queue("c")
    urls = sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"]
    assert [u.rsplit("/", 1)[1] for u in urls] == ["a", "b"]


def test_redrive_allow_policy_denies(sqs: Any, make_queue: Any) -> None:
    make_queue("closed", RedriveAllowPolicy=json.dumps({"redrivePermission": "denyAll"}))
    make_queue(
        "picky",
        RedriveAllowPolicy=json.dumps(
            {"redrivePermission": "byQueue", "sourceQueueArns": [arn("allowed")]}
        ),
    )
    for dlq, source in (("closed", "anyone"), ("picky", "stranger")):
        with pytest.raises(ClientError) as exc:
            sqs.create_queue(QueueName=source, Attributes={"RedrivePolicy": _policy(dlq, 3)})
        assert exc.value.response["Error"]["Code"] == "InvalidParameterValue"
    make_queue("allowed", RedrivePolicy=_policy("picky", 3))


def test_no_chains(sqs: Any, make_queue: Any) -> None:
    make_queue("dlq")
    make_queue("orders", RedrivePolicy=_policy("dlq", 3))
    with pytest.raises(ClientError) as exc:
        sqs.set_queue_attributes(
            QueueUrl=sqs.get_queue_url(QueueName="dlq")["QueueUrl"],
            Attributes={"RedrivePolicy": _policy("orders", 3)},
        )
    assert exc.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_move_task_sends_each_message_back_to_its_own_source(sqs: Any, make_queue: Any) -> None:
    dlq = make_queue("dlq")
    a = make_queue("a", RedrivePolicy=_policy("dlq", 1))
    b = make_queue("b", RedrivePolicy=_policy("dlq", 1))
    sqs.send_message(QueueUrl=a, MessageBody="from a")
    sqs.send_message(QueueUrl=b, MessageBody="from b")
    for url in (a, b):
        _fail(sqs, url, 1)
        sqs.receive_message(QueueUrl=url)  # moves it
    counts = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages"])
    assert counts["Attributes"]["ApproximateNumberOfMessages"] == "2"
    handle = sqs.start_message_move_task(SourceArn=arn("dlq"))["TaskHandle"]
    assert handle
    task = _wait_task(sqs, "dlq", "COMPLETED")
    assert task["Status"] == "COMPLETED"
    assert task["ApproximateNumberOfMessagesMoved"] == 2
    assert task["ApproximateNumberOfMessagesToMove"] == 2
    assert "TaskHandle" not in task  # only while running
    for url, body in ((a, "from a"), (b, "from b")):
        got = sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"]
        assert [m["Body"] for m in got] == [body]
        # A fresh budget: the redriven message can be received again before dying.
        assert got[0]["Attributes"]["ApproximateReceiveCount"] == "1"


def test_move_task_to_a_destination(sqs: Any, make_queue: Any) -> None:
    make_queue("dlq")
    a = make_queue("a", RedrivePolicy=_policy("dlq", 1))
    retry = make_queue("retry")
    sqs.send_message(QueueUrl=a, MessageBody="x")
    _fail(sqs, a, 1)
    sqs.receive_message(QueueUrl=a)
    sqs.start_message_move_task(SourceArn=arn("dlq"), DestinationArn=arn("retry"))
    task = _wait_task(sqs, "dlq", "COMPLETED")
    assert task["DestinationArn"] == arn("retry")
    assert sqs.receive_message(QueueUrl=retry)["Messages"][0]["Body"] == "x"
    assert "Messages" not in sqs.receive_message(QueueUrl=a)


def _dead_letters(sqs: Any, make_queue: Any, n: int) -> None:
    make_queue("dlq")
    src = make_queue("src", RedrivePolicy=_policy("dlq", 1), VisibilityTimeout="0")
    for start in range(0, n, 10):
        sqs.send_message_batch(
            QueueUrl=src,
            Entries=[
                {"Id": str(i), "MessageBody": f"m{i}"} for i in range(start, min(n, start + 10))
            ],
        )
    while sqs.receive_message(QueueUrl=src, MaxNumberOfMessages=10).get("Messages"):
        pass  # every second receive of a message moves it


def test_move_task_rate_limit_and_cancel(sqs: Any, make_queue: Any) -> None:
    _dead_letters(sqs, make_queue, 30)
    handle = sqs.start_message_move_task(SourceArn=arn("dlq"), MaxNumberOfMessagesPerSecond=5)[
        "TaskHandle"
    ]
    with pytest.raises(ClientError) as exc:
        sqs.start_message_move_task(SourceArn=arn("dlq"))
    assert exc.value.response["Error"]["Code"] == "InvalidParameterValue"
    time.sleep(1.0)
    running = sqs.list_message_move_tasks(SourceArn=arn("dlq"))["Results"][0]
    elapsed = time.time() - running["StartedTimestamp"] / 1000
    # At 5 messages a second, a task moves at most what accrued since it started (plus one
    # second's worth it may catch up on): a slower machine moves fewer, never more, so the
    # bound tells 5 a second from 10 whatever the load.
    assert running["Status"] == "RUNNING"
    assert running["MaxNumberOfMessagesPerSecond"] == 5
    assert running["ApproximateNumberOfMessagesMoved"] <= 5 * (elapsed + 1)
    moved = sqs.cancel_message_move_task(TaskHandle=handle)["ApproximateNumberOfMessagesMoved"]
    assert moved < 30
    task = _wait_task(sqs, "dlq", "CANCELLED")
    assert task["Status"] == "CANCELLED"
    with pytest.raises(ClientError):
        sqs.cancel_message_move_task(TaskHandle=handle)


def test_move_task_needs_a_dead_letter_queue(sqs: Any, make_queue: Any) -> None:
    make_queue("plain")
    with pytest.raises(ClientError) as exc:
        sqs.start_message_move_task(SourceArn=arn("plain"))
    assert exc.value.response["Error"]["Code"] == "InvalidParameterValue"
    with pytest.raises(sqs.exceptions.ResourceNotFoundException):
        sqs.start_message_move_task(SourceArn=arn("missing"))


def test_a_dead_letters_error_fields_are_its_dlq_message_attributes(
    sqs: Any, make_queue: Any, sqs_engine: Any
) -> None:
    # Given a message a native consumer dead-lettered with the exception's fields,
    dlq = make_queue("orders-dlq")
    url = make_queue("orders", RedrivePolicy=_policy("orders-dlq", 5))
    sqs.send_message(QueueUrl=url, MessageBody="m", MessageAttributes={
        "kind": {"DataType": "String", "StringValue": "order"}})  # fmt: skip
    project = "123456789012"
    claim = sqs_engine.claim(project, "orders", limit=1)
    error = ErrorDetails(message="'id'", error_class="KeyError", stack="Traceback\n  x")
    sqs_engine.dead_letter(
        project, "orders", held=[(claim.messages[0].id, claim.id)], description="bad", error=error
    )
    # an SQS consumer of the DLQ reads them as DLQ.* message attributes beside the sender's.
    (m,) = sqs.receive_message(QueueUrl=dlq, MessageAttributeNames=["All"])["Messages"]
    shown = {k: v["StringValue"] for k, v in m["MessageAttributes"].items()}
    assert shown == {
        "kind": "order",
        "DLQ.sourceQueue": "orders",
        "DLQ.reason": "rejected",
        "DLQ.description": "bad",
        "DLQ.errorClass": "KeyError",
        "DLQ.errorMessage": "'id'",
        "DLQ.errorStack": "Traceback\n  x",
    }


@pytest.mark.parametrize(
    ("names", "shown"),
    [
        (["All"], {"kind", "DLQ.sourceQueue", "DLQ.reason"}),
        (["DLQ.*"], {"DLQ.sourceQueue", "DLQ.reason"}),
        (["DLQ.sourceQueue"], {"DLQ.sourceQueue"}),
        (["kind"], {"kind"}),
    ],
)
def test_a_dead_letter_carries_its_source_queue_as_the_reserved_attribute(
    sqs: Any, make_queue: Any, names: list[str], shown: set[str]
) -> None:
    # Given a DLQ of two source queues, and a message of each moved there at its limit
    dlq = make_queue("orders-dlq")
    for source in ("orders", "payments"):
        url = make_queue(source, RedrivePolicy=_policy("orders-dlq", 1))
        sqs.send_message(QueueUrl=url, MessageBody=source, MessageAttributes={
            "kind": {"DataType": "String", "StringValue": "order"}})  # fmt: skip
        _fail(sqs, url, 1)
        assert "Messages" not in sqs.receive_message(QueueUrl=url)
    # its consumer tells them apart by DLQ.sourceQueue (seed 002's reserved attribute), and
    # reads the reason each died of beside it, picked by name as the sender's own attributes
    # (A receive may return fewer than are there, as on AWS: received until both are in hand.)
    received: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(received) < 2 and time.monotonic() < deadline:
        got = sqs.receive_message(
            QueueUrl=dlq, MaxNumberOfMessages=10, MessageAttributeNames=names, WaitTimeSeconds=1
        )
        received += got.get("Messages", [])
    (first, second) = sorted(received, key=lambda m: m["Body"])
    for m, source in ((first, "orders"), (second, "payments")):
        attributes = m.get("MessageAttributes", {})
        assert set(attributes) == shown
        if "DLQ.sourceQueue" in shown:
            assert attributes["DLQ.sourceQueue"] == {"DataType": "String", "StringValue": source}
        if "DLQ.reason" in shown:
            assert attributes["DLQ.reason"]["StringValue"] == "max_claims"
