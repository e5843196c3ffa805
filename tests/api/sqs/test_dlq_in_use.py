"""The SQS face deletes and purges a DLQ that sources name as AWS does, without a word (the
Zaqar face and the CLI want force for it): the sources' redrive policies turn inactive."""

from __future__ import annotations

import json
from typing import Any

from tests.api.sqs.conftest import arn


def test_delete_and_purge_of_a_dlq_in_use_are_allowed_as_on_aws(sqs: Any) -> None:
    dlq = sqs.create_queue(QueueName="in-use-dlq")["QueueUrl"]
    policy = json.dumps({"deadLetterTargetArn": arn("in-use-dlq"), "maxReceiveCount": "2"})
    sqs.create_queue(QueueName="in-use-src", Attributes={"RedrivePolicy": policy})
    sqs.purge_queue(QueueUrl=dlq)
    sqs.delete_queue(QueueUrl=dlq)
    urls = sqs.list_queues(QueueNamePrefix="in-use").get("QueueUrls", [])
    assert [u.rsplit("/", 1)[1] for u in urls] == ["in-use-src"]
