"""The query protocol sent as GET, its fields in the query string, as AWS takes it beside POST
(aiosqs and hand-written curl calls send it so): every action of the model, SigV4 in the
header or presigned in the query, and the paths that stay Zaqar's."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from deadletter.storage.base import Store
from tests.api.sqs.conftest import ACCOUNT, REGION, client
from tests.api.sqs.test_conformance import LOOSE, OPERATIONS, World, _call, _output
from tests.auth.live import live_server
from tests.support.sqs_query import SQS_NAMESPACE, send_as_get

# Reading the query string happens in the face, before the engine; the engine's behaviour on
# each store is tested through the same actions over POST (tests/README.md).
pytestmark = pytest.mark.one_store

NS = {"sqs": SQS_NAMESPACE}
VERSION = "2012-11-05"


@pytest.fixture
def over_get(server_url: str, query_model_path: object) -> tuple[Any, list[str]]:
    """A query-protocol client that sends every request as a GET, and the methods it sent."""
    sqs = client(server_url, protocol="query", config=LOOSE)
    return sqs, send_as_get(sqs)


@pytest.mark.parametrize("operation", OPERATIONS)
def test_the_smallest_request_of_every_action_succeeds_over_get(
    over_get: tuple[Any, list[str]], operation: str
) -> None:
    # Given a queue, its DLQ and a received message, all made over GET,
    sqs, sent = over_get
    world = World(sqs)
    # the action's smallest request, sent as a GET, is answered as the model says
    result = _call(sqs, operation, world.minimal(operation))
    assert {k for k in result if k != "ResponseMetadata"} <= set(_output(operation)["members"])
    assert result["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert set(sent) == {"GET"}


def test_a_get_is_read_like_a_post(over_get: tuple[Any, list[str]]) -> None:
    sqs, _ = over_get
    url = sqs.create_queue(QueueName="q", Attributes={"DelaySeconds": "0"})["QueueUrl"]
    sqs.send_message(
        QueueUrl=url,
        MessageBody="hello",
        MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}},
    )
    (got,) = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    assert got["Body"] == "hello"
    assert got["MessageAttributes"] == {"k": {"DataType": "String", "StringValue": "v"}}


def _get(url: str, path: str = "/", **fields: str) -> httpx.Response:
    return httpx.get(f"{url}{path}", params={"Version": VERSION, **fields}, timeout=10)


def test_curl_style_gets_at_the_root_and_on_a_queue_path(server_url: str) -> None:
    created = _get(server_url, Action="CreateQueue", QueueName="jobs")
    assert created.status_code == 200, created.text
    listed = _get(server_url, Action="ListQueues")
    assert listed.status_code == 200 and listed.headers["content-type"].startswith("text/xml")
    urls = [e.text for e in ET.fromstring(listed.text).iter(f"{{{SQS_NAMESPACE}}}QueueUrl")]
    assert urls == [f"{server_url}/{ACCOUNT}/jobs"]
    sent = _get(server_url, f"/{ACCOUNT}/jobs", Action="SendMessage", MessageBody="x")
    assert sent.status_code == 200, sent.text
    assert ET.fromstring(sent.text).find(".//sqs:MessageId", NS) is not None


def test_gets_without_an_action_are_not_sqs(server_url: str) -> None:
    # `GET /` is Zaqar's versions document; a Zaqar path stays Zaqar's with an Action too.
    assert httpx.get(server_url + "/").status_code == 300
    zaqar = httpx.get(f"{server_url}/v2/queues", params={"Action": "ListQueues"})
    assert zaqar.headers["content-type"].startswith("application/json")
    assert httpx.get(f"{server_url}/{ACCOUNT}/jobs").status_code == 405


def _signed_get(url: str, key_id: str, secret: str, presigned: bool, **fields: str) -> Any:
    request = AWSRequest(method="GET", url=f"{url}/?{urlencode({'Version': VERSION, **fields})}")
    if presigned:
        SigV4QueryAuth(Credentials(key_id, secret), "sqs", REGION, expires=300).add_auth(request)
    else:
        SigV4Auth(Credentials(key_id, secret), "sqs", REGION).add_auth(request)
    prepared = request.prepare()
    return httpx.get(prepared.url, headers=dict(prepared.headers.items()), timeout=10)


@pytest.mark.parametrize("presigned", [False, True], ids=["header", "presigned"])
def test_sigv4_over_a_get_query_string_is_verified(store: Store, presigned: bool) -> None:
    with live_server(store) as live:
        credential, secret = live.issue("alpha", "admin")
        ok = _signed_get(live.url, credential.key_id, secret, presigned, Action="CreateQueue",
                         QueueName="q")  # fmt: skip
        assert ok.status_code == 200, ok.text
        assert live.engine.find_queue("alpha", "q") is not None
        bad = _signed_get(live.url, credential.key_id, "nope", presigned, Action="ListQueues")
        assert bad.status_code == 403 and "<Code>SignatureDoesNotMatch</Code>" in bad.text
        unsigned = httpx.get(live.url, params={"Action": "ListQueues", "Version": VERSION})
        assert unsigned.status_code == 403
        assert "<Code>MissingAuthenticationToken</Code>" in unsigned.text
