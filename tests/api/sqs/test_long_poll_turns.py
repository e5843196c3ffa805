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
from deadletter.client import Client
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
    claims = _counting_claims(sqs_engine, monkeypatch)
    sqs = client(server_url, config=Config(max_pool_connections=WAITING + 2))
    url = sqs.create_queue(QueueName="orders")["QueueUrl"]
    polls, received = _long_polls(sqs, url, WAITING, seconds=10)
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


def _counting_claims(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The queue of each claim the engine makes from now on."""
    claims: list[str] = []
    claim = engine.claim

    def counted(project: str, queue: str, **kwargs: Any) -> Any:
        claims.append(queue)
        return claim(project, queue, **kwargs)

    monkeypatch.setattr(engine, "claim", counted)
    return claims


def _long_polls(sqs: Any, url: str, count: int, seconds: int) -> tuple[list[Any], list[Any]]:
    """`count` receives of one message each, waiting up to `seconds`, started in threads:
    (the threads, what each received)."""
    received: list[list[str]] = []

    def long_poll() -> None:
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=seconds, MaxNumberOfMessages=1)
        received.append([m["Body"] for m in got.get("Messages", [])])

    polls = [threading.Thread(target=long_poll) for _ in range(count)]
    for poll in polls:
        poll.start()
    return polls, received


def test_only_the_first_long_poll_in_line_looks_again_while_nothing_comes(
    server_url: str, sqs_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 20 long polls waiting on an empty queue, looking again every 0.1 s
    monkeypatch.setattr(sqs_messages, "RECHECK", 0.1)
    claims = _counting_claims(sqs_engine, monkeypatch)
    sqs = client(server_url, config=Config(max_pool_connections=WAITING + 2))
    url = sqs.create_queue(QueueName="quiet")["QueueUrl"]
    polls, received = _long_polls(sqs, url, WAITING, seconds=2)
    until_polling(sqs_engine, ACCOUNT, "quiet", count=WAITING)
    claims.clear()
    # When a second passes
    time.sleep(1.0)
    # I expect about ten claims, the first in line's: not ten for each long poll
    assert claims.count("quiet") <= 15
    for poll in polls:
        poll.join(timeout=5)
    assert received == [[]] * WAITING


def test_a_message_whose_visibility_timeout_ends_is_claimed_by_the_first_in_line_only(
    server_url: str, sqs_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a message received with a one-second visibility timeout, and five long polls
    # waiting for it (looking again only when told to, or when it shows again)
    monkeypatch.setattr(sqs_messages, "RECHECK", 60.0)
    claims = _counting_claims(sqs_engine, monkeypatch)
    sqs = client(server_url, config=Config(max_pool_connections=8))
    url = sqs.create_queue(QueueName="again")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="again")
    assert sqs.receive_message(QueueUrl=url, VisibilityTimeout=1)["Messages"]
    polls, received = _long_polls(sqs, url, 5, seconds=3)
    until_polling(sqs_engine, ACCOUNT, "again", count=5)
    claims.clear()
    # When it shows again
    eventually(lambda: received, seconds=2.5, what="a long poll receiving it again")
    time.sleep(0.3)  # time for any other long poll woken to claim
    # I expect one long poll to receive it, and no more than one other to look
    assert received == [["again"]]
    assert claims.count("again") <= 2
    for poll in polls:
        poll.join(timeout=5)
    assert sorted(received) == [[]] * 4 + [["again"]]


def test_a_send_wakes_a_long_poll_of_every_consumer_tag(
    server_url: str, sqs_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two long polls waiting for each consumer group of a queue: its own consumers,
    # and tags billing and shipping (each receives every message)
    monkeypatch.setattr(sqs_messages, "RECHECK", 60.0)
    sqs = client(server_url, config=Config(max_pool_connections=8))
    url = sqs.create_queue(QueueName="fanout")["QueueUrl"]
    with Client(server_url) as native:
        native.create_tag("fanout", "billing")
        native.create_tag("fanout", "shipping")
    groups = {"": url, "billing": url + ":billing", "shipping": url + ":shipping"}
    polls = {name: _long_polls(sqs, group_url, 2, seconds=4) for name, group_url in groups.items()}
    until_polling(sqs_engine, ACCOUNT, "fanout", count=6)
    # When one message is sent
    sqs.send_message(QueueUrl=url, MessageBody="order")
    # I expect it received at once by one long poll of each group
    for name, (_, received) in polls.items():
        assert eventually(lambda r=received: r, seconds=2, what=f"{name or 'own'} receiving")
        assert received == [["order"]]
    for threads, _ in polls.values():
        for poll in threads:
            poll.join(timeout=6)
