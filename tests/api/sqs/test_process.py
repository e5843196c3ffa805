"""boto3 against `deadletter serve --test-mode` as its own process, on each backend: the flow a
moto-server test suite runs, dead-letter queue and redrive included."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.api.serve_process import start, stop
from tests.api.sqs.conftest import ACCOUNT, arn, client


def test_a_moto_style_suite_runs_against_the_server_process(store_url: str, tmp_path: Path) -> None:
    proc, url = start(store_url, tmp_path, "--test-mode", "--sweep-interval", "0.2")
    try:
        sqs = client(url)
        assert client(url, "sts").get_caller_identity()["Account"] == ACCOUNT
        sqs.create_queue(QueueName="jobs-dlq")
        policy = json.dumps({"deadLetterTargetArn": arn("jobs-dlq"), "maxReceiveCount": 1})
        jobs = sqs.create_queue(QueueName="jobs", Attributes={"RedrivePolicy": policy})["QueueUrl"]
        sqs.send_message(QueueUrl=jobs, MessageBody="poison")
        sqs.receive_message(QueueUrl=jobs, VisibilityTimeout=0)
        assert "Messages" not in sqs.receive_message(QueueUrl=jobs)  # moved
        sqs.start_message_move_task(SourceArn=arn("jobs-dlq"))
        deadline = time.monotonic() + 20
        while (
            sqs.list_message_move_tasks(SourceArn=arn("jobs-dlq"))["Results"][0]["Status"]
            != "COMPLETED"
        ):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert sqs.receive_message(QueueUrl=jobs)["Messages"][0]["Body"] == "poison"
        # Between tests a moto-server suite resets the server.
        assert httpx.post(f"{url}/moto-api/reset").status_code == 200
        assert sqs.list_queues().get("QueueUrls", []) == []
    finally:
        stop(proc)
