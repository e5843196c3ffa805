"""Subscriptions against the real server over a socket: webhooks notified, failures
dead-lettered, and python-zaqarclient's subscription calls."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from zaqarclient.queues import client as zaqar
from zaqarclient.transport import errors as zaqar_errors

from deadletter.api.app import build_app
from deadletter.engine.deliveries import Deliveries, DeliverySettings
from deadletter.engine.engine import Engine
from deadletter.engine.subscriptions import RetryPolicy
from deadletter.storage.base import Store
from tests.api.zaqar.conftest import CLIENT_ID
from tests.support.receivers import WAIT, allow_local, receiving
from tests.support.servers import serving

# Real time, so retries come quickly: 10 ms, then 20 ms.
FAST = DeliverySettings(retry=RetryPolicy(retries=2, backoff=0.01), timeout=WAIT, tick=0.01)


@pytest.fixture
def server(store: Store) -> Iterator[tuple[str, Deliveries]]:
    engine = Engine(store)
    deliveries = Deliveries(engine, allow_local(engine), FAST)
    with serving(build_app(engine, background=[deliveries])) as url:
        yield url, deliveries


@pytest.fixture
def http(server: tuple[str, Deliveries]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server[0], headers={"Client-ID": CLIENT_ID}) as client:
        yield client


def test_a_posted_message_reaches_the_webhook(http: httpx.Client) -> None:
    with receiving() as hook:
        r = http.post("/v2/queues/q/subscriptions", json={"subscriber": hook.url, "ttl": 600})
        assert r.status_code == 201, r.text
        http.post("/v2/queues/q/messages", json={"messages": [{"body": {"n": 1}, "ttl": 120}]})
        assert hook.wait_for(1)
    assert hook.bodies == [
        {"body": {"n": 1}, "ttl": 120, "queue_name": "q", "Message_Type": "Notification"}
    ]


def test_a_failing_webhook_ends_in_the_dlq_with_its_status(
    http: httpx.Client, server: tuple[str, Deliveries]
) -> None:
    # Given a queue with a DLQ and a subscriber answering 500
    http.put("/v2/queues/q-dlq", json={})
    http.put("/v2/queues/q", json={"_max_claim_count": 3, "_dead_letter_queue": "q-dlq"})
    with receiving(status=500) as hook:
        http.post("/v2/queues/q/subscriptions", json={"subscriber": hook.url, "ttl": 600})
        # when a message is posted, it is tried three times (two retries)
        http.post("/v2/queues/q/messages", json={"messages": [{"body": "hi"}]})
        assert hook.wait_for(3)
        # then it is dead-lettered with reason delivery_failed
        found: list[Any] = []
        for _ in range(int(WAIT / 0.05)):  # until the last failure is recorded
            found = http.get("/v2/queues/q-dlq/dead_letters?reason=delivery_failed").json()[
                "messages"
            ]
            if found:
                break
            time.sleep(0.05)
    (dead,) = found
    assert len(hook.posts) == 3 and dead["body"] == "hi"
    provenance = dead["provenance"]
    assert provenance["reason"] == "delivery_failed" and provenance["error"] == "HTTP 500"
    assert hook.url in provenance["description"]


@pytest.fixture
def cli(server: tuple[str, Deliveries]) -> Any:
    return zaqar.Client(
        server[0],
        version=2,
        conf={"auth_opts": {"backend": "noauth", "options": {"os_project_id": "p"}}},
    )


def test_python_zaqarclient_subscriptions(cli: Any) -> None:
    # The calls of python-zaqarclient's own functional suite for subscriptions
    queue = cli.queue("beijing", force_create=True)
    one = cli.subscription("beijing", subscriber="http://trigger.me", ttl=3600)
    two = cli.subscription(
        "beijing", subscriber="http://trigger.he", ttl=7200, options={"check everything": True}
    )
    assert (one.subscriber, one.ttl, two.ttl) == ("http://trigger.me", 3600, 7200)
    assert one.confirmed is False and one.age is not None
    again = cli.subscription("beijing", subscriber="http://trigger.he", ttl=7200)
    assert again.id == two.id
    got = cli.subscription("beijing", id=one.id)
    assert (got.subscriber, got.ttl) == ("http://trigger.me", 3600)
    listed = {s.subscriber: s for s in queue.subscriptions()}
    assert set(listed) == {"http://trigger.me", "http://trigger.he"}
    he = listed["http://trigger.he"]
    assert (he.queue_name, he.id, he.ttl) == ("beijing", two.id, 7200)
    assert he.options == {"check everything": True}
    sub = cli.subscription("beijing", auto_create=False, id=one.id)
    sub.update({"subscriber": "http://trigger.ok", "ttl": 1000})
    reread = cli.subscription("beijing", id=one.id)
    assert (reread.subscriber, reread.ttl) == ("http://trigger.ok", 1000)
    one.delete()
    with pytest.raises(zaqar_errors.ResourceNotFound):
        cli.subscription("beijing", id=one.id)
    one.delete()  # again: still 204
    queue.delete()
    assert list(cli.subscriptions("beijing")) == []
