"""The SQS face of Solace's model: templates give queues made by `CreateQueue` their settings
(the attributes given win), and the Solace settings are queue attributes (docs/sqs.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from deadletter.domain.templates import TemplateSettings
from deadletter.engine.engine import Engine
from tests.api.sqs.conftest import ACCOUNT, arn


def test_create_queue_takes_the_matching_template(sqs: Any, sqs_engine: Engine) -> None:
    # Given a template for orders-* with a DLQ and a 600 s maximum TTL
    sqs.create_queue(QueueName="orders-dlq")
    template = TemplateSettings(max_claims=3, dlq="orders-dlq", max_ttl=600, min_ttl=1)
    sqs_engine.templates.create(ACCOUNT, "orders", pattern="orders-*", settings=template)
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
    sqs_engine.templates.create(ACCOUNT, "orders", pattern="orders-*", settings=template)
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


def test_solace_attributes_set_the_solace_settings_and_read_back(
    sqs: Any, sqs_engine: Engine
) -> None:
    plain = sqs.create_queue(QueueName="plain")["QueueUrl"]
    got = sqs.get_queue_attributes(QueueUrl=plain, AttributeNames=["All"])["Attributes"]
    assert not {"DeadLetterEligible", "RespectTtl", "MinimumMessageTtl"} & set(got)
    given = {"DeadLetterEligible": "false", "RespectTtl": "true", "MinimumMessageTtl": "5"}
    url = sqs.create_queue(QueueName="solace", Attributes=given)["QueueUrl"]
    s = sqs_engine.get_queue(ACCOUNT, "solace").settings
    assert (s.dead_letter_eligible, s.respect_ttl, s.min_ttl) == (False, True, 5)
    names = list(given)
    assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"] == given
    # The same CreateQueue again is idempotent; "" takes a setting back to its absence.
    assert sqs.create_queue(QueueName="solace", Attributes=given)["QueueUrl"] == url
    unset = {"DeadLetterEligible": "true", "RespectTtl": "", "MinimumMessageTtl": ""}
    sqs.set_queue_attributes(QueueUrl=url, Attributes=unset)
    s = sqs_engine.get_queue(ACCOUNT, "solace").settings
    assert (s.dead_letter_eligible, s.respect_ttl, s.min_ttl) == (True, None, None)


def test_solace_attributes_are_checked(sqs: Any, sqs_engine: Engine) -> None:
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    for name, value in [
        ("DeadLetterEligible", "yes"),
        ("DeadLetterEligible", ""),
        ("RespectTtl", "1"),
        ("MinimumMessageTtl", "0"),
        ("MinimumMessageTtl", "x"),
        ("MinimumMessageTtl", "1209601"),
    ]:
        with pytest.raises(ClientError) as e:
            sqs.set_queue_attributes(QueueUrl=url, Attributes={name: value})
        assert e.value.response["Error"]["Code"].endswith("InvalidAttributeValue"), (name, value)
    # A floor above the queue's maximum TTL (its retention period) is the engine's to refuse.
    with pytest.raises(ClientError):
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"MinimumMessageTtl": "345601"})
    assert sqs_engine.get_queue(ACCOUNT, "q").settings.min_ttl is None


def test_a_queue_not_eligible_by_default_drops_what_it_would_dead_letter(sqs: Any) -> None:
    # Given Solace's default (DMQ-eligible off) on a queue whose DLQ takes a message at its
    # first redelivery
    dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    policy = json.dumps({"deadLetterTargetArn": arn("dlq"), "maxReceiveCount": "1"})
    url = sqs.create_queue(
        QueueName="q", Attributes={"RedrivePolicy": policy, "DeadLetterEligible": "false"}
    )["QueueUrl"]
    # When a message sent without the flag and one sent eligible are received and given back
    eligible = {"DeadLetterEligible": {"DataType": "String", "StringValue": "true"}}
    sqs.send_message(QueueUrl=url, MessageBody="plain")
    sqs.send_message(QueueUrl=url, MessageBody="marked", MessageAttributes=eligible)
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert len(got) == 2
    for m in got:
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
        )
    # I expect only the marked one in the DLQ, and nothing left in the queue
    assert sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []) == []
    dead = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in dead] == ["marked"]
