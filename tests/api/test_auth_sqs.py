"""The SQS face with authentication required: boto3 and the query protocol with real keys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from deadletter.storage.base import Store
from tests.auth.live import Live, boto, live_server, query_call, zaqar


@pytest.fixture
def live(store: Store) -> Iterator[Live]:
    with live_server(store) as server:
        yield server


def _code(call: Any) -> str:
    with pytest.raises(ClientError) as caught:
        call()
    return str(caught.value.response["Error"]["Code"])


def test_boto3_with_a_real_key_pair(live: Live) -> None:
    credential, secret = live.issue("alpha", "admin")
    sqs = boto(live.url, credential.key_id, secret)
    url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
    assert f"/{credential.account_id}/jobs" in url
    sqs.send_message(QueueUrl=url, MessageBody="hello")
    received = sqs.receive_message(QueueUrl=url)["Messages"]
    assert [m["Body"] for m in received] == ["hello"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=received[0]["ReceiptHandle"])
    # The queue belongs to the credential's project; the account id is only how SQS URLs
    # and ARNs name that project.
    assert live.engine.find_queue("alpha", "jobs") is not None
    assert live.engine.find_queue(credential.account_id, "jobs") is None


def test_a_queue_is_one_thing_through_both_faces(live: Live) -> None:
    """Given a project whose name is not an account id, a queue made and filled through the
    Zaqar face is the same queue that boto3 lists and receives from, and back again."""
    credential, secret = live.issue("tenant-a", "admin")
    token = f"{credential.key_id}:{secret}"
    assert zaqar(live.url, "PUT", "/v2/queues/orders", token=token).status_code == 201
    posted = zaqar(
        live.url, "POST", "/v2/queues/orders/messages", token=token,
        json={"messages": [{"body": {"order": 1}}]},
    )  # fmt: skip
    assert posted.status_code == 201
    sqs = boto(live.url, credential.key_id, secret)
    urls = sqs.list_queues()["QueueUrls"]
    assert urls == [f"{live.url}/{credential.account_id}/orders"]
    received = sqs.receive_message(QueueUrl=urls[0])["Messages"]
    assert [json.loads(m["Body"]) for m in received] == [{"order": 1}]
    sqs.send_message(QueueUrl=urls[0], MessageBody="from sqs")
    stats = zaqar(live.url, "GET", "/v2/queues/orders/stats", token=token).json()
    assert stats["messages"]["total"] == 2


def test_wrong_secret_unknown_and_revoked_keys_are_refused(live: Live) -> None:
    credential, secret = live.issue("alpha", "admin")
    assert _code(lambda: boto(live.url, credential.key_id, secret + "x").list_queues()) == (
        "SignatureDoesNotMatch"
    )
    assert _code(lambda: boto(live.url, "DLAKAAAAAAAAAAAAAAAA", secret).list_queues()) == (
        "InvalidClientTokenId"
    )
    live.authority.revoke(credential.key_id)
    assert _code(lambda: boto(live.url, credential.key_id, secret).list_queues()) == (
        "InvalidClientTokenId"
    )


def test_the_query_protocol_is_verified_too(live: Live) -> None:
    credential, secret = live.issue("alpha", "admin")
    ok = query_call(live.url, credential.key_id, secret, Action="CreateQueue", QueueName="q")
    assert ok.status_code == 200, ok.text
    bad = query_call(live.url, credential.key_id, "nope", Action="ListQueues")
    assert bad.status_code == 403 and "<Code>SignatureDoesNotMatch</Code>" in bad.text
    unsigned = httpx.post(live.url, data={"Action": "ListQueues"})
    assert unsigned.status_code == 403
    assert "<Code>MissingAuthenticationToken</Code>" in unsigned.text


def test_a_role_limits_the_actions(live: Live) -> None:
    admin, admin_secret = live.issue("alpha", "admin")
    url = boto(live.url, admin.key_id, admin_secret).create_queue(QueueName="jobs")["QueueUrl"]
    producer, secret = live.issue("alpha", "producer")
    sqs = boto(live.url, producer.key_id, secret)
    assert sqs.get_queue_url(QueueName="jobs")["QueueUrl"] == url
    sqs.send_message(QueueUrl=url, MessageBody="x")
    assert _code(lambda: sqs.receive_message(QueueUrl=url)) == "AccessDenied"
    assert _code(lambda: sqs.delete_queue(QueueUrl=url)) == "AccessDenied"


def test_test_mode_never_comes_with_authentication(store: Store) -> None:
    """Test mode once turned SQS authentication off under --auth required; the two now
    exclude each other wherever an app is built."""
    with pytest.raises(ValueError, match="exclude each other"), live_server(store, test_mode=True):
        pass


def test_a_credential_keeps_its_regions_apart(live: Live) -> None:
    """With keys required, a region other than the home one is the project's too, apart:
    the same credential signing for eu-west-1 sees only that region's queues."""
    credential, secret = live.issue("alpha", "admin")
    home = boto(live.url, credential.key_id, secret)
    abroad = boto(live.url, credential.key_id, secret, region="eu-west-1")
    url = abroad.create_queue(QueueName="jobs")["QueueUrl"]
    assert url == f"{live.url}/eu-west-1/{credential.account_id}/jobs"
    abroad.send_message(QueueUrl=url, MessageBody="abroad")
    assert "QueueUrls" not in home.list_queues()
    assert live.engine.find_queue("alpha@eu-west-1", "jobs") is not None
    assert live.engine.find_queue("alpha", "jobs") is None
    # Roles are the project's in every region: a reader may not send, here either.
    reader, reader_secret = live.issue("alpha", "reader")
    assert _code(lambda: boto(live.url, reader.key_id, reader_secret).send_message(
        QueueUrl=url, MessageBody="no"
    )) == "AccessDenied"  # fmt: skip
