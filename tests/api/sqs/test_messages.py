"""Message actions through boto3: send, receive, delete, visibility, long polling."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from deadletter.api.sqs import messages as sqs_messages
from deadletter.engine.engine import Engine
from tests.api.sqs.conftest import ACCOUNT, client
from tests.support.polls import until_polling


def test_send_and_receive_with_attributes_and_digests(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders")
    attributes = {
        "tenant": {"DataType": "String", "StringValue": "acme"},
        "amount": {"DataType": "Number", "StringValue": "12.5"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
    }
    sent = sqs.send_message(QueueUrl=url, MessageBody="hello", MessageAttributes=attributes)
    # AWS's published digests for exactly this body and these attributes' encoding.
    assert sent["MD5OfMessageBody"] == "5d41402abc4b2a76b9719d911017c592"
    got = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"], AttributeNames=["All"])[
        "Messages"
    ]
    assert len(got) == 1
    m = got[0]
    assert m["MessageId"] == sent["MessageId"]
    assert m["Body"] == "hello"
    assert m["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]
    assert m["MessageAttributes"]["blob"]["BinaryValue"] == b"\x00\xff"
    assert m["MessageAttributes"]["amount"] == {"DataType": "Number", "StringValue": "12.5"}
    assert m["Attributes"]["ApproximateReceiveCount"] == "1"
    assert int(m["Attributes"]["SentTimestamp"]) <= int(
        m["Attributes"]["ApproximateFirstReceiveTimestamp"]
    )


def test_message_attribute_names_select_what_is_returned(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders")
    sqs.send_message(
        QueueUrl=url,
        MessageBody="x",
        MessageAttributes={
            "trace.id": {"DataType": "String", "StringValue": "1"},
            "trace.span": {"DataType": "String", "StringValue": "2"},
            "tenant": {"DataType": "String", "StringValue": "acme"},
        },
        DelaySeconds=0,
    )
    m = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["trace.*"], VisibilityTimeout=0)
    assert set(m["Messages"][0]["MessageAttributes"]) == {"trace.id", "trace.span"}
    m = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["tenant"], VisibilityTimeout=0)
    assert set(m["Messages"][0]["MessageAttributes"]) == {"tenant"}
    m = sqs.receive_message(QueueUrl=url)
    assert "MessageAttributes" not in m["Messages"][0]


def test_reserved_and_malformed_attributes_are_refused(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders")
    for attributes in (
        {"DLQ.sourceQueue": {"DataType": "String", "StringValue": "x"}},
        {"n": {"DataType": "Number", "StringValue": "twelve"}},
        {"n": {"DataType": "Date", "StringValue": "today"}},
    ):
        with pytest.raises(ClientError) as exc:
            sqs.send_message(QueueUrl=url, MessageBody="x", MessageAttributes=attributes)
        assert exc.value.response["Error"]["Code"] == "InvalidParameterValue"
    with pytest.raises(ClientError) as exc:
        sqs.send_message(QueueUrl=url, MessageBody="bad \x01 char")
    assert exc.value.response["Error"]["Code"] == "InvalidMessageContents"
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_batch_send_reports_each_entry(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders")
    result = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "ok", "MessageBody": "fine"},
            {"Id": "late", "MessageBody": "later", "DelaySeconds": 901},
        ],
    )
    assert [e["Id"] for e in result["Successful"]] == ["ok"]
    assert result["Failed"][0]["Id"] == "late"
    assert result["Failed"][0]["SenderFault"] is True


@pytest.mark.parametrize(
    ("entries", "code"),
    [
        ([], "AWS.SimpleQueueService.EmptyBatchRequest"),
        (
            [{"Id": str(i), "MessageBody": "x"} for i in range(11)],
            "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        ),
        (
            [{"Id": "a", "MessageBody": "x"}, {"Id": "a", "MessageBody": "y"}],
            "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
        ),
        ([{"Id": "no spaces", "MessageBody": "x"}], "AWS.SimpleQueueService.InvalidBatchEntryId"),
    ],
)
def test_bad_batches(sqs: Any, make_queue: Any, entries: list[Any], code: str) -> None:
    url = make_queue("orders")
    with pytest.raises(ClientError) as exc:
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    assert exc.value.response["Error"]["Code"] == code


def test_delete_and_delete_batch(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders", VisibilityTimeout="0")
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3)["Messages"]
    assert len(got) == 3
    sqs.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])
    result = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "a", "ReceiptHandle": got[1]["ReceiptHandle"]},
            {"Id": "b", "ReceiptHandle": "not-a-handle"},
        ],
    )
    assert [e["Id"] for e in result["Successful"]] == ["a"]
    assert result["Failed"][0]["Code"] == "ReceiptHandleIsInvalid"
    left = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in left] == ["m2"]


@pytest.mark.parametrize("action", ["delete_message_batch", "change_message_visibility_batch"])
def test_a_batch_of_bad_handles_on_a_missing_queue_names_the_queue(
    sqs: Any, make_queue: Any, action: str
) -> None:
    url = make_queue("gone")
    sqs.delete_queue(QueueUrl=url)
    entry = {"Id": "a", "ReceiptHandle": "not-a-handle", "VisibilityTimeout": 0}
    if action == "delete_message_batch":
        del entry["VisibilityTimeout"]
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        getattr(sqs, action)(QueueUrl=url, Entries=[entry])


def test_a_stale_receipt_handle_deletes_nothing(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders", VisibilityTimeout="0")
    sqs.send_message(QueueUrl=url, MessageBody="x")
    old = sqs.receive_message(QueueUrl=url)["Messages"][0]["ReceiptHandle"]
    sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)  # someone else holds it now
    sqs.delete_message(QueueUrl=url, ReceiptHandle=old)
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert got["ApproximateNumberOfMessagesNotVisible"] == "1"


def test_visibility_hides_until_changed(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders")
    sqs.send_message(QueueUrl=url, MessageBody="x")
    handle = sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)["Messages"][0][
        "ReceiptHandle"
    ]
    assert "Messages" not in sqs.receive_message(QueueUrl=url)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=0)
    again = sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)["Messages"]
    assert again[0]["Body"] == "x"
    result = sqs.change_message_visibility_batch(
        QueueUrl=url,
        Entries=[{"Id": "a", "ReceiptHandle": again[0]["ReceiptHandle"], "VisibilityTimeout": 0}],
    )
    assert [e["Id"] for e in result["Successful"]] == ["a"]
    assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "x"


def test_change_visibility_of_a_message_not_in_flight(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders", VisibilityTimeout="0")
    sqs.send_message(QueueUrl=url, MessageBody="x")
    handle = sqs.receive_message(QueueUrl=url)["Messages"][0]["ReceiptHandle"]
    with pytest.raises(sqs.exceptions.MessageNotInflight):
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=10)


def test_delay_seconds(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders")
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=60)
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_purge(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders")
    sqs.send_message(QueueUrl=url, MessageBody="x")
    sqs.purge_queue(QueueUrl=url)
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_long_poll_returns_when_a_message_arrives(
    sqs: Any, make_queue: Any, server_url: str, sqs_engine: Engine, monkeypatch: Any
) -> None:
    # The poll's own periodic look would find the message too: only the wake-up may.
    monkeypatch.setattr(sqs_messages, "RECHECK", 60.0)
    url = make_queue("orders")
    sender = client(server_url)

    def send_soon() -> None:
        # Only once the receive waits: a message sent earlier would be found, not awaited.
        until_polling(sqs_engine, ACCOUNT, "orders")
        sender.send_message(QueueUrl=url, MessageBody="woke")

    thread = threading.Thread(target=send_soon)
    started = time.monotonic()
    thread.start()
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)
    waited = time.monotonic() - started
    thread.join()
    assert got["Messages"][0]["Body"] == "woke"
    # Woken by the send, not by the end of the 5 s wait.
    assert waited < 4


def test_long_poll_waits_when_nothing_arrives(sqs: Any, make_queue: Any) -> None:
    url = make_queue("orders", ReceiveMessageWaitTimeSeconds="1")
    started = time.monotonic()
    got = sqs.receive_message(QueueUrl=url)
    assert "Messages" not in got
    assert time.monotonic() - started >= 0.9


@pytest.mark.postgres
def test_long_poll_wakes_on_a_send_through_another_server_process(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """Two servers on one PostgreSQL database: a send through one wakes a receive waiting on
    the other (LISTEN/NOTIFY), well before the wait ends."""
    from deadletter.api.app import AppOptions, build_app
    from deadletter.engine.engine import Engine
    from deadletter.storage import open_store
    from tests.services import postgres_schema
    from tests.support.servers import serving

    monkeypatch.setattr(sqs_messages, "RECHECK", 60.0)  # only the wake-up may find it
    with postgres_schema() as db:
        first, second = open_store(db), open_store(db)
        engine_a = Engine(first)
        try:
            with (
                serving(build_app(engine_a, AppOptions())) as url_a,
                serving(build_app(Engine(second), AppOptions())) as url_b,
            ):
                waiting, sending = client(url_a), client(url_b)
                queue = waiting.create_queue(QueueName="shared")["QueueUrl"]

                def send_soon() -> None:
                    until_polling(engine_a, ACCOUNT, "shared")
                    sending.send_message(QueueUrl="shared", MessageBody="from b")

                thread = threading.Thread(target=send_soon)
                started = time.monotonic()
                thread.start()
                got = waiting.receive_message(QueueUrl=queue, WaitTimeSeconds=8)
                waited = time.monotonic() - started
                thread.join()
                assert got["Messages"][0]["Body"] == "from b"
                assert waited < 6
        finally:
            first.close()
            second.close()


@pytest.fixture
def no_recheck(monkeypatch: pytest.MonkeyPatch) -> None:
    """Long polls look again only when told to or when a hidden message's time comes (the
    periodic re-check is pushed beyond the waits below)."""
    monkeypatch.setattr(sqs_messages, "RECHECK", 60.0)


def test_long_poll_returns_a_message_whose_visibility_timeout_ends_during_the_wait(
    sqs: Any, make_queue: Any, no_recheck: None
) -> None:
    # Given a message received with a one-second visibility timeout
    url = make_queue("orders")
    sqs.send_message(QueueUrl=url, MessageBody="again")
    sqs.receive_message(QueueUrl=url, VisibilityTimeout=1)
    # When a consumer long-polls for longer than that
    started = time.monotonic()
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=15, AttributeNames=["All"])
    waited = time.monotonic() - started
    # Then it gets the message back once visible, before its wait is over
    (message,) = got["Messages"]
    assert message["Body"] == "again"
    assert message["Attributes"]["ApproximateReceiveCount"] == "2"
    assert waited < 15


def test_long_poll_returns_a_message_whose_delay_ends_during_the_wait(
    sqs: Any, make_queue: Any, no_recheck: None
) -> None:
    url = make_queue("orders")
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=1)
    started = time.monotonic()
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=15)
    waited = time.monotonic() - started
    assert got["Messages"][0]["Body"] == "later"
    assert waited < 15
