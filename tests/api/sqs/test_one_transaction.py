"""A send on the SQS face checks its entries against the queue's settings in the send's own
transaction: one store transaction per request, none to read the queue first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
