"""One queue, two faces: what SQS creates Zaqar sees, and the reverse; test mode."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.api.sqs.conftest import ACCOUNT, arn, client

ZAQAR = {"Client-ID": "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11", "X-Project-ID": ACCOUNT}


def test_a_queue_created_through_sqs_is_a_zaqar_queue(sqs: Any, server_url: str) -> None:
    sqs.create_queue(QueueName="orders-dlq")
    policy = json.dumps({"deadLetterTargetArn": arn("orders-dlq"), "maxReceiveCount": 5})
    url = sqs.create_queue(
        QueueName="orders", Attributes={"RedrivePolicy": policy, "VisibilityTimeout": "70"}
    )["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody='{"order": 1}')
    meta = httpx.get(f"{server_url}/v2/queues/orders", headers=ZAQAR).json()
    assert meta["_max_claim_count"] == 5
    assert meta["_dead_letter_queue"] == "orders-dlq"
    assert meta["_default_claim_ttl"] == 70
    r = httpx.post(f"{server_url}/v2/queues/orders/claims", headers=ZAQAR, json={})
    assert r.status_code == 201
    assert r.json()["messages"][0]["body"] == {"order": 1}


def test_a_zaqar_queue_is_an_sqs_queue(sqs: Any, server_url: str) -> None:
    assert httpx.put(f"{server_url}/v2/queues/jobs-dlq", headers=ZAQAR, json={}).status_code == 201
    r = httpx.put(
        f"{server_url}/v2/queues/jobs",
        headers=ZAQAR,
        json={"_max_claim_count": 2, "_dead_letter_queue": "jobs-dlq"},
    )
    assert r.status_code == 201
    r = httpx.post(
        f"{server_url}/v2/queues/jobs/messages",
        headers=ZAQAR,
        json={"messages": [{"body": {"job": 7}, "ttl": 300}]},
    )
    assert r.status_code == 201
    url = sqs.get_queue_url(QueueName="jobs")["QueueUrl"]
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])
    assert json.loads(got["Attributes"]["RedrivePolicy"])["maxReceiveCount"] == 2
    m = sqs.receive_message(QueueUrl=url)["Messages"][0]
    assert json.loads(m["Body"]) == {"job": 7}
    dlq = sqs.get_queue_url(QueueName="jobs-dlq")["QueueUrl"]
    assert sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"] == [url]


def test_a_long_sqs_name_is_reachable_through_zaqar(sqs: Any, server_url: str) -> None:
    """SQS allows 80 characters, Zaqar creates at most 64; the queue is still one queue."""
    name = "q" * 80
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="long")
    posted = httpx.post(
        f"{server_url}/v2/queues/{name}/messages",
        headers=ZAQAR,
        json={"messages": [{"body": "longer"}]},
    )
    assert posted.status_code == 201, posted.text
    r = httpx.get(f"{server_url}/v2/queues/{name}/messages?echo=true", headers=ZAQAR)
    assert r.status_code == 200, r.text
    assert [m["body"] for m in r.json()["messages"]] == ["long", "longer"]
    assert httpx.put(f"{server_url}/v2/queues/{'z' * 65}", headers=ZAQAR).status_code == 400


def test_test_mode_reset_and_caller_identity(sqs: Any, server_url: str) -> None:
    sqs.create_queue(QueueName="doomed")
    assert httpx.post(f"{server_url}/moto-api/reset").status_code == 200
    assert sqs.list_queues().get("QueueUrls", []) == []
    sts = client(server_url, "sts")
    assert sts.get_caller_identity()["Account"] == ACCOUNT
