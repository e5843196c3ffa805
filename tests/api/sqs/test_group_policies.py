"""Dead-letter policies per consumer group and per reason through boto3: the redrive policy's
`deadLetterRoutes` extension (reason -> DLQ ARN), and a tag's own policy (set on the native
face) obeyed by its `:<tag>` URL."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from deadletter.client import Client
from tests.api.sqs.conftest import arn


def redrive(routes: dict[str, str] | None = None, **extra: Any) -> str:
    policy: dict[str, Any] = {"deadLetterTargetArn": arn("orders-dlq"), "maxReceiveCount": 3}
    if routes is not None:
        policy["deadLetterRoutes"] = {reason: arn(q) for reason, q in routes.items()}
    return json.dumps({**policy, **extra})


def policy_of(sqs: Any, url: str) -> dict[str, Any]:
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])
    doc: dict[str, Any] = json.loads(got["Attributes"]["RedrivePolicy"])
    return doc


def test_dead_letters_routed_by_reason(sqs: Any, make_queue: Callable[..., str]) -> None:
    make_queue("orders-dlq")
    rejects = make_queue("orders-rejects")
    url = make_queue("orders", RedrivePolicy=redrive({"max_claims": "orders-rejects"}))
    assert policy_of(sqs, url)["deadLetterRoutes"] == {"max_claims": arn("orders-rejects")}
    sqs.send_message(QueueUrl=url, MessageBody="poison")
    for _ in range(3):
        (got,) = sqs.receive_message(QueueUrl=url)["Messages"]
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=got["ReceiptHandle"], VisibilityTimeout=0
        )
    (dead,) = sqs.receive_message(QueueUrl=rejects)["Messages"]
    assert dead["Body"] == "poison"
    sources = sqs.list_dead_letter_source_queues(QueueUrl=rejects)["queueUrls"]
    assert sources == [url]
    # A policy without the member keeps the routes; `{}` removes them.
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": redrive()})
    assert "deadLetterRoutes" in policy_of(sqs, url)
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": redrive({})})
    assert "deadLetterRoutes" not in policy_of(sqs, url)


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        (redrive(redriveAllowPolicy="x"), "unknown attribute: redriveAllowPolicy"),
        (redrive({"bored": "orders-rejects"}), "not a dead-letter reason"),
        (redrive({"expired": "nowhere"}), "does not exist"),
        (redrive({"expired": "orders"}), "own dead-letter queue"),
        (redrive(deadLetterRoutes=["x"]), "deadLetterRoutes must be"),
    ],
)
def test_bad_routes_are_refused(
    sqs: Any, make_queue: Callable[..., str], policy: str, words: str
) -> None:
    make_queue("orders-dlq")
    make_queue("orders-rejects")
    url = make_queue("orders")
    with pytest.raises(ClientError) as caught:
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": policy})
    assert words in caught.value.response["Error"]["Message"]
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert "RedrivePolicy" not in got


def test_a_tag_url_obeys_the_tags_own_policy(
    sqs: Any, make_queue: Callable[..., str], server_url: str
) -> None:
    make_queue("orders-dlq")
    billing_dlq = make_queue("billing-dlq")
    url = make_queue("orders", RedrivePolicy=redrive())
    with Client(server_url) as native:
        native.create_tag(
            "orders", "billing", policy={"max_claims": 1, "dead_letter_queue": "billing-dlq"}
        )
    sqs.send_message(QueueUrl=url, MessageBody="order-1")
    (got,) = sqs.receive_message(QueueUrl=url + ":billing")["Messages"]
    sqs.change_message_visibility(
        QueueUrl=url + ":billing", ReceiptHandle=got["ReceiptHandle"], VisibilityTimeout=0
    )
    assert "Messages" not in sqs.receive_message(QueueUrl=url + ":billing")
    (dead,) = sqs.receive_message(QueueUrl=billing_dlq, MessageAttributeNames=["All"])["Messages"]
    assert dead["MessageAttributes"]["DLQ.sourceTag"]["StringValue"] == "billing"
    # The queue's own consumers are under the queue's policy: still there for them.
    assert len(sqs.receive_message(QueueUrl=url)["Messages"]) == 1
