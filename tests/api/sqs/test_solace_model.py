"""The SQS face of Solace's model: templates give queues made by `CreateQueue` their settings
(the attributes given win), and the Solace settings are queue attributes (docs/sqs.md)."""

from __future__ import annotations

import json
from typing import Any

from deadletter.domain.model import TemplateSettings
from deadletter.engine.engine import Engine
from tests.api.sqs.conftest import ACCOUNT, arn


def test_create_queue_takes_the_matching_template(sqs: Any, sqs_engine: Engine) -> None:
    # Given a template for orders-* with a DLQ and a 600 s maximum TTL
    sqs.create_queue(QueueName="orders-dlq")
    template = TemplateSettings(max_claims=3, dlq="orders-dlq", max_ttl=600, min_ttl=1)
    sqs_engine.templates.create(ACCOUNT, "orders", "orders-*", template)
    # When CreateQueue makes orders-eu with no attributes
    url = sqs.create_queue(QueueName="orders-eu")["QueueUrl"]
    # I expect the template's policy and TTLs
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    policy = json.loads(got["RedrivePolicy"])
    assert (policy["deadLetterTargetArn"], policy["maxReceiveCount"]) == (arn("orders-dlq"), 3)
    assert got["MessageRetentionPeriod"] == "600"
    queue = sqs_engine.get_queue(ACCOUNT, "orders-eu")
    assert (queue.settings.max_ttl, queue.settings.min_ttl) == (600, 1)
    # and a queue the template does not match keeps SQS's defaults
    other = sqs.create_queue(QueueName="billing")["QueueUrl"]
    got = sqs.get_queue_attributes(QueueUrl=other, AttributeNames=["All"])["Attributes"]
    assert "RedrivePolicy" not in got and got["MessageRetentionPeriod"] == "345600"


def test_attributes_given_to_create_queue_win_over_the_template(
    sqs: Any, sqs_engine: Engine
) -> None:
    sqs.create_queue(QueueName="orders-dlq")
    sqs.create_queue(QueueName="other-dlq")
    template = TemplateSettings(max_claims=3, dlq="orders-dlq", max_ttl=600)
    sqs_engine.templates.create(ACCOUNT, "orders", "orders-*", template)
    given = {
        "RedrivePolicy": json.dumps(
            {"deadLetterTargetArn": arn("other-dlq"), "maxReceiveCount": "7"}
        ),
        "MessageRetentionPeriod": "120",
    }
    url = sqs.create_queue(QueueName="orders-us", Attributes=given)["QueueUrl"]
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    policy = json.loads(got["RedrivePolicy"])
    assert (policy["deadLetterTargetArn"], policy["maxReceiveCount"]) == (arn("other-dlq"), 7)
    assert got["MessageRetentionPeriod"] == "120"
