"""Many long polls on one queue, through boto3: a send wakes one of them, not all, and every
message still reaches a long poll while it waits (`api/notify.py`, `Notifier.competing`).
The notifier is the same on every store: SQLite only."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from botocore.config import Config

from deadletter.api.sqs import messages as sqs_messages
from deadletter.engine.engine import Engine
from tests.api.sqs.conftest import ACCOUNT, client
from tests.support.polls import eventually, until_polling

pytestmark = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)

WAITING = 20


def test_a_send_wakes_one_of_many_long_polls_and_every_message_reaches_one(
    server_url: str, sqs_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 20 long polls of one message each waiting on a queue, looking again only when
    # woken (the periodic look pushed beyond their wait), and every claim counted
    monkeypatch.setattr(sqs_messages, "RECHECK", 60.0)
    claims: list[str] = []
    claim = sqs_engine.claim

    def counted(project: str, queue: str, **kwargs: Any) -> Any:
        claims.append(queue)
        return claim(project, queue, **kwargs)

    monkeypatch.setattr(sqs_engine, "claim", counted)
    sqs = client(server_url, config=Config(max_pool_connections=WAITING + 2))
    url = sqs.create_queue(QueueName="orders")["QueueUrl"]
    received: list[list[str]] = []

    def long_poll() -> None:
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=10, MaxNumberOfMessages=1)
        received.append([m["Body"] for m in got.get("Messages", [])])

    polls = [threading.Thread(target=long_poll) for _ in range(WAITING)]
    for poll in polls:
        poll.start()
    until_polling(sqs_engine, ACCOUNT, "orders", count=WAITING)
    claims.clear()

    # When one message is sent
    sqs.send_message(QueueUrl=url, MessageBody="first")
    eventually(lambda: received, what="a long poll receiving the message")
    time.sleep(0.3)  # time for any other long poll woken to claim
    # I expect it claimed by one long poll, and one more to look for what may be left
    assert received == [["first"]]
    assert claims.count("orders") <= 2

    # And when the rest come in two batches, each long poll gets one message, long before
    # its wait is over: a long poll that took one wakes the next
    for batch in (range(1, 11), range(11, WAITING)):
        entries = [{"Id": str(i), "MessageBody": f"m{i}"} for i in batch]
        assert not sqs.send_message_batch(QueueUrl=url, Entries=entries).get("Failed")
    started = time.monotonic()
    for poll in polls:
        poll.join(timeout=8)
    assert time.monotonic() - started < 5
    assert sorted(len(got) for got in received) == [1] * WAITING
    assert len({body for got in received for body in got}) == WAITING
