"""What AWS SQS code and test suites rely on, through boto3 in both wire protocols (JSON and
query) on each store: request ids, message attribute wildcards, the trace header as a system
attribute, UntagQueue's refusal of no keys."""

from __future__ import annotations

import gzip
import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import botocore
import botocore.loaders
import botocore.session
import httpx
import pytest
from botocore.exceptions import ClientError

from tests.api.sqs.conftest import REGION

SQS_NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/"
TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def _query_models(root: Path) -> Path:
    """A copy of botocore's SQS model that speaks the query protocol, as SDKs did before SQS
    took JSON: the JSON model keeps the shapes, the query protocol's names are put back
    (`Attribute.1.Name`, `MessageAttributeName.1`, `<Message>`, `<...Result>`)."""
    source = Path(os.path.dirname(botocore.__file__), "data/sqs/2012-11-05/service-2.json.gz")
    model = json.loads(gzip.decompress(source.read_bytes()))
    model["metadata"].update(protocol="query", protocols=["query"], xmlNamespace=SQS_NAMESPACE)
    for name, operation in model["operations"].items():
        if "output" in operation:
            operation["output"]["resultWrapper"] = f"{name}Result"
    shapes = model["shapes"]
    for name, shape in shapes.items():
        if shape.get("flattened") and shape["type"] == "list":
            singular = {"MessageSystemAttributeList": "MessageSystemAttributeName"}
            shape["member"]["locationName"] = singular.get(name, name.removesuffix("List"))
        elif shape.get("flattened") and shape["type"] == "map":
            key = "Key" if name == "TagMap" else "Name"
            shape["key"]["locationName"], shape["value"]["locationName"] = key, "Value"
        for member_name, member in shape.get("members", {}).items():
            target = shapes[member["shape"]]
            if target.get("flattened") and target["type"] == "map":
                member["locationName"] = member_name[0].upper() + member_name[1:-1]
    folder = root / "sqs" / "2012-11-05"
    folder.mkdir(parents=True)
    (folder / "service-2.json").write_text(json.dumps(model))
    return root


@pytest.fixture(scope="module")
def query_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _query_models(tmp_path_factory.mktemp("models"))


@pytest.fixture(params=["json", "query"])
def aws(request: pytest.FixtureRequest, server_url: str, query_models: Path) -> Any:
    """A boto3 SQS client in one wire protocol."""
    session = botocore.session.get_session()
    if request.param == "query":
        loader = botocore.loaders.Loader(extra_search_paths=[str(query_models)])
        session.register_component("data_loader", loader)
    client = boto3.session.Session(botocore_session=session).client(
        "sqs",
        endpoint_url=server_url,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    assert client.meta.service_model.protocol == request.param
    return client


@pytest.fixture
def queue(aws: Any) -> Callable[[str], str]:
    def make(name: str) -> str:
        url: str = aws.create_queue(QueueName=name)["QueueUrl"]
        return url

    return make


def _is_uuid(text: str) -> bool:
    return str(uuid.UUID(text)) == text


# 1. Request ids ----------------------------------------------------------------------------


def test_every_answer_carries_a_request_id(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("ids")
    first = aws.send_message(QueueUrl=url, MessageBody="x")["ResponseMetadata"]
    second = aws.get_queue_url(QueueName="ids")["ResponseMetadata"]
    for meta in (first, second):
        assert _is_uuid(meta["RequestId"])
        assert meta["HTTPHeaders"]["x-amzn-requestid"] == meta["RequestId"]
    assert first["RequestId"] != second["RequestId"]


def test_an_error_carries_a_request_id(aws: Any) -> None:
    with pytest.raises(ClientError) as caught:
        aws.get_queue_url(QueueName="absent")
    meta = caught.value.response["ResponseMetadata"]
    assert _is_uuid(meta["RequestId"])
    assert meta["HTTPHeaders"]["x-amzn-requestid"] == meta["RequestId"]


def test_the_xml_request_id_is_the_header_s(server_url: str) -> None:
    for fields in ({"Action": "ListQueues"}, {"Action": "GetQueueUrl", "QueueName": "absent"}):
        r = httpx.post(server_url, data={"Version": "2012-11-05", **fields}, timeout=10)
        assert f"<RequestId>{r.headers['x-amzn-requestid']}</RequestId>" in r.text


# 2. MessageAttributeNames wildcards ----------------------------------------------------------


def _string(value: str) -> dict[str, str]:
    return {"DataType": "String", "StringValue": value}


@pytest.mark.parametrize(
    ("asked", "shown"),
    [
        (["All"], {"order.id", "order.kind", "orderly", "tenant"}),
        ([".*"], {"order.id", "order.kind", "orderly", "tenant"}),
        (["order.*"], {"order.id", "order.kind"}),
        (["order.*", "tenant"], {"order.id", "order.kind", "tenant"}),
        (["absent.*"], set()),
    ],
)
def test_message_attribute_names_take_wildcards(
    aws: Any, queue: Callable[[str], str], asked: list[str], shown: set[str]
) -> None:
    url = queue("wild")
    names = ("order.id", "order.kind", "orderly", "tenant")
    aws.send_message(
        QueueUrl=url, MessageBody="x", MessageAttributes={n: _string(n) for n in names}
    )
    (message,) = aws.receive_message(QueueUrl=url, MessageAttributeNames=asked)["Messages"]
    got = message.get("MessageAttributes", {})
    assert set(got) == shown
    assert all(got[n] == _string(n) for n in shown)
    assert ("MD5OfMessageAttributes" in message) == bool(shown)


# 3. AWSTraceHeader ---------------------------------------------------------------------------

TRACE_ATTRIBUTE = {"AWSTraceHeader": _string(TRACE)}


def _receive(aws: Any, url: str, **asked: list[str]) -> dict[str, Any]:
    (message,) = aws.receive_message(
        QueueUrl=url, MessageAttributeNames=["All"], VisibilityTimeout=0, **asked
    )["Messages"]
    return dict(message)


def test_the_trace_header_is_a_system_attribute(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("traced")
    sent = aws.send_message(
        QueueUrl=url,
        MessageBody="x",
        MessageAttributes={"tenant": _string("acme")},
        MessageSystemAttributes=TRACE_ATTRIBUTE,
    )
    assert sent["MD5OfMessageSystemAttributes"]
    for asked in (
        {"MessageSystemAttributeNames": ["AWSTraceHeader"]},
        {"MessageSystemAttributeNames": ["All"]},
        {"AttributeNames": ["All"]},
        {"AttributeNames": ["AWSTraceHeader"]},
    ):
        message = _receive(aws, url, **asked)
        assert message["Attributes"]["AWSTraceHeader"] == TRACE
        assert message["MessageAttributes"] == {"tenant": _string("acme")}
        assert message["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]
    assert "Attributes" not in _receive(aws, url)
    message = _receive(aws, url, MessageSystemAttributeNames=["SentTimestamp"])
    assert "AWSTraceHeader" not in message["Attributes"]


def test_the_trace_header_alone_is_no_message_attribute(
    aws: Any, queue: Callable[[str], str]
) -> None:
    url = queue("trace-only")
    sent = aws.send_message(QueueUrl=url, MessageBody="x", MessageSystemAttributes=TRACE_ATTRIBUTE)
    assert "MD5OfMessageAttributes" not in sent
    message = _receive(aws, url, AttributeNames=["All"])
    assert "MessageAttributes" not in message
    assert message["Attributes"]["AWSTraceHeader"] == TRACE


def test_a_batch_carries_trace_headers(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("traced-batch")
    result = aws.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": "a", "MessageBody": "x", "MessageSystemAttributes": TRACE_ATTRIBUTE}],
    )
    assert [e["Id"] for e in result["Successful"]] == ["a"]
    assert _receive(aws, url, AttributeNames=["All"])["Attributes"]["AWSTraceHeader"] == TRACE


@pytest.mark.parametrize(
    "system",
    [
        {"SentTimestamp": _string("1")},
        {"AWSTraceHeader": {"DataType": "Number", "StringValue": "1"}},
    ],
)
def test_other_system_attributes_are_refused(
    aws: Any, queue: Callable[[str], str], system: dict[str, Any]
) -> None:
    url = queue("untraced")
    with pytest.raises(ClientError) as caught:
        aws.send_message(QueueUrl=url, MessageBody="x", MessageSystemAttributes=system)
    assert caught.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_the_stored_name_cannot_be_sent(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("spoof")
    with pytest.raises(ClientError) as caught:
        aws.send_message(
            QueueUrl=url, MessageBody="x", MessageAttributes={"aws.AWSTraceHeader": _string("y")}
        )
    assert caught.value.response["Error"]["Code"] == "InvalidParameterValue"


# 4. UntagQueue -------------------------------------------------------------------------------


def test_untag_with_no_keys_is_refused(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("tagged")
    aws.tag_queue(QueueUrl=url, Tags={"team": "core"})
    with pytest.raises(ClientError) as caught:
        aws.untag_queue(QueueUrl=url, TagKeys=[])
    assert caught.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert aws.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "core"}
    aws.untag_queue(QueueUrl=url, TagKeys=["team"])
    assert "Tags" not in aws.list_queue_tags(QueueUrl=url)


def test_an_empty_receive_has_no_messages(aws: Any, queue: Callable[[str], str]) -> None:
    url = queue("empty")
    result = aws.receive_message(QueueUrl=url, WaitTimeSeconds=0)
    assert "Messages" not in result
    assert _is_uuid(result["ResponseMetadata"]["RequestId"])
