"""Queues are kept apart per region (the SigV4 credential scope's); the home region's are the
project's own, another region's live under `<project>@<region>` for the native API too."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from tests.api.sqs.conftest import ACCOUNT, REGION, client

OTHER = "eu-west-1"


@pytest.fixture
def home(server_url: str, protocol: str) -> Any:
    return client(server_url, protocol=protocol)


@pytest.fixture
def abroad(server_url: str, protocol: str) -> Any:
    return client(server_url, protocol=protocol, region_name=OTHER)


def test_one_name_in_two_regions_is_two_queues(home: Any, abroad: Any, server_url: str) -> None:
    # Given a queue "orders" in each of two regions
    home_url = home.create_queue(QueueName="orders")["QueueUrl"]
    abroad_url = abroad.create_queue(QueueName="orders")["QueueUrl"]
    # Their URLs and ARNs say which region they are in
    assert home_url == f"{server_url}/{ACCOUNT}/orders"
    assert abroad_url == f"{server_url}/{OTHER}/{ACCOUNT}/orders"
    arns = [
        c.get_queue_attributes(QueueUrl=u, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for c, u in ((home, home_url), (abroad, abroad_url))
    ]
    assert arns == [
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders",
        f"arn:aws:sqs:{OTHER}:{ACCOUNT}:orders",
    ]
    # When each gets its own message
    home.send_message(QueueUrl=home_url, MessageBody="from home")
    abroad.send_message(QueueUrl="orders", MessageBody="from abroad")
    # Then each region receives only its own
    assert [m["Body"] for m in home.receive_message(QueueUrl="orders")["Messages"]] == ["from home"]
    assert [m["Body"] for m in abroad.receive_message(QueueUrl=abroad_url)["Messages"]] == [
        "from abroad"
    ]


def test_a_region_lists_and_finds_only_its_own_queues(home: Any, abroad: Any) -> None:
    abroad.create_queue(QueueName="only-abroad")
    assert "QueueUrls" not in home.list_queues()
    with pytest.raises(ClientError) as exc:
        home.get_queue_url(QueueName="only-abroad")
    assert exc.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
    assert len(abroad.list_queues()["QueueUrls"]) == 1


def test_a_queue_url_names_its_region_whichever_client_uses_it(home: Any, abroad: Any) -> None:
    abroad_url = abroad.create_queue(QueueName="shared-name")["QueueUrl"]
    home.create_queue(QueueName="shared-name")
    home.send_message(QueueUrl=abroad_url, MessageBody="by url")
    assert abroad.receive_message(QueueUrl="shared-name")["Messages"][0]["Body"] == "by url"


def test_a_dead_letter_queue_of_another_region_is_refused(home: Any, abroad: Any) -> None:
    abroad.create_queue(QueueName="dlq")
    policy = {"deadLetterTargetArn": f"arn:aws:sqs:{OTHER}:{ACCOUNT}:dlq", "maxReceiveCount": 1}
    with pytest.raises(ClientError) as exc:
        home.create_queue(QueueName="work", Attributes={"RedrivePolicy": json.dumps(policy)})
    assert exc.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert "QueueUrls" not in home.list_queues()  # the refused queue was not created


def test_the_native_api_sees_another_region_under_its_project(abroad: Any, server_url: str) -> None:
    abroad.create_queue(QueueName="regional")
    headers = {"Client-ID": "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"}
    native = {**headers, "X-Project-ID": f"{ACCOUNT}@{OTHER}"}
    assert httpx.get(f"{server_url}/v2/queues/regional", headers=native).status_code == 200
    home_project = {**headers, "X-Project-ID": ACCOUNT}
    assert httpx.get(f"{server_url}/v2/queues/regional", headers=home_project).status_code == 404
