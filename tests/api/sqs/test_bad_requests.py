"""Single bad SQS requests, in either protocol, on each store: each is refused with AWS's code,
never a 5xx, and no other message changes state."""

from __future__ import annotations

import base64
import json
import logging
import uuid
import xml.etree.ElementTree as ET
from typing import Any

import httpx
import pytest
from starlette.responses import JSONResponse

from deadletter.api.sqs import attributes as attrs
from deadletter.api.sqs import message_attributes as message_attrs
from deadletter.api.sqs import wire
from deadletter.domain.model import Attribute, NewMessage, QueueSettings
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient
from tests.support.sqs_fuzz import ACCOUNT, Sentinel, query_fields

BASE_URL = "http://testserver"
NS = "{http://queue.amazonaws.com/doc/2012-11-05/}"
QUEUE_URL = f"{BASE_URL}/{ACCOUNT}/work"
ARN = f"arn:aws:sqs:us-east-1:{ACCOUNT}"


def json_call(http: ApiClient, action: str, body: bytes | dict[str, Any]) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": wire.JSON_CONTENT_TYPE}
    return http.post("/", content=content, headers=headers)


def query_call(http: ApiClient, body: bytes | dict[str, str], path: str = "/") -> httpx.Response:
    content = body if isinstance(body, bytes) else str(httpx.QueryParams(body)).encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    return http.post(path, content=content, headers=headers)


def call(http: ApiClient, protocol: str, action: str, params: dict[str, Any]) -> httpx.Response:
    if protocol == "json":
        return json_call(http, action, params)
    return query_call(http, dict(query_fields(action, params)))


def error_code(r: httpx.Response) -> tuple[int, str, str]:
    """(status, code as botocore reports it, message) of an error in either protocol."""
    if r.headers["content-type"].startswith("text/xml"):
        root = ET.fromstring(r.content)
        assert root.tag == f"{NS}ErrorResponse"
        return (
            r.status_code,
            root.findtext(f"{NS}Error/{NS}Code") or "",
            root.findtext(f"{NS}Error/{NS}Message") or "",
        )
    body = r.json()
    code = r.headers["x-amzn-query-error"].split(";")[0]
    assert body["__type"].startswith("com.amazonaws.sqs#")
    return r.status_code, code, body["message"]


PROTOCOLS = pytest.mark.parametrize("protocol", ["json", "query"])


# 1. Malformed flattened members and wrong types --------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"Action": "CreateQueue", "QueueName": "fresh", "Attribute.1": "foo"},
        {
            "Action": "SendMessage",
            "QueueUrl": QUEUE_URL,
            "MessageBody": "x",
            "MessageAttribute.1": "foo",
        },
        {
            "Action": "SendMessageBatch",
            "QueueUrl": QUEUE_URL,
            "SendMessageBatchRequestEntry.1": "foo",
        },
        {"Action": "TagQueue", "QueueUrl": QUEUE_URL, "Tag.1": "foo"},
        {"Action": "TagQueue", "QueueUrl": QUEUE_URL, "Tag.1.Key": "k", "Tag.1": "foo"},
        {"Action": "TagQueue", "QueueUrl": QUEUE_URL, "Tag.x.Key": "k"},
    ],
    ids=["attribute", "message-attribute", "batch-entry", "tag", "tag-both", "tag-unnumbered"],
)
def test_a_flattened_member_given_as_a_plain_value_is_malformed(
    http: ApiClient, sentinel: Sentinel, fields: dict[str, str]
) -> None:
    r = query_call(http, {"Version": "2012-11-05", **fields})
    assert error_code(r)[:2] == (404, "MalformedQueryString")


def test_a_flattened_member_without_its_name_is_a_missing_parameter(
    http: ApiClient, sentinel: Sentinel
) -> None:
    r = query_call(http, {"Action": "CreateQueue", "QueueName": "fresh", "Attribute.1.Value": "30"})
    assert error_code(r)[:2] == (400, "MissingParameter")
    assert "Attribute.1.Name" in error_code(r)[2]


@pytest.mark.parametrize(
    ("action", "params", "code"),
    [
        (
            "ChangeMessageVisibility",
            {"ReceiptHandle": 5, "VisibilityTimeout": 1},
            "ReceiptHandleIsInvalid",
        ),
        ("DeleteMessage", {"ReceiptHandle": ["x"]}, "InvalidParameterValue"),
        ("DeleteMessageBatch", {"Entries": [{"Id": "a", "ReceiptHandle": {}}]}, None),
        ("SetQueueAttributes", {"Attributes": {"Policy": 5}}, "InvalidAttributeValue"),
        ("SetQueueAttributes", {"Attributes": {"VisibilityTimeout": [1]}}, "InvalidAttributeValue"),
        ("TagQueue", {"Tags": {"team": 1}}, "InvalidParameterValue"),
        (
            "SendMessage",
            {"MessageBody": "x", "MessageAttributes": {"a": "b"}},
            "MissingParameter",
        ),
        ("ReceiveMessage", {"AttributeNames": "All"}, "InvalidParameterValue"),
        ("StartMessageMoveTask", {"SourceArn": {"arn": 1}}, "InvalidParameterValue"),
    ],
)
def test_a_parameter_of_the_wrong_type_is_refused(
    http: ApiClient, sentinel: Sentinel, action: str, params: dict[str, Any], code: str | None
) -> None:
    r = json_call(http, action, {"QueueUrl": QUEUE_URL, **params})
    if code is None:  # a batch answers per entry
        assert r.status_code == 200
        (failed,) = r.json()["Failed"]
        assert failed["Code"] == "ReceiptHandleIsInvalid"
    else:
        assert error_code(r)[1] == code


# 2. Bodies that are not strict JSON or UTF-8 -----------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b'{"QueueNamePrefix": NaN}',
        b'{"MaxResults": Infinity}',
        b'{"MaxResults": 1e400}',
        b'{"QueueNamePrefix": "\\ud800"}',
        b'{"QueueNamePrefix": ' + b"[" * 10_000 + b"]" * 10_000 + b"}",
        b'{"QueueNamePrefix": "\xff"}',
        b"[1]",
    ],
    ids=["nan", "infinity", "overflow", "lone-surrogate", "deep", "not-utf8", "not-object"],
)
def test_a_body_that_is_not_strict_json_is_a_serialization_error(
    http: ApiClient, sentinel: Sentinel, body: bytes
) -> None:
    r = json_call(http, "ListQueues", body)
    assert error_code(r)[:2] == (400, "SerializationException")


def test_a_form_body_that_is_not_utf8_is_malformed(http: ApiClient, sentinel: Sentinel) -> None:
    r = query_call(http, b"Action=GetQueueUrl&QueueName=\xff\xfe")
    status, code, message = error_code(r)
    assert (status, code) == (404, "MalformedQueryString")
    assert "UTF-8" in message and "JSON" not in message


# 3. A stored message that the SQS face would not have accepted -----------------------


def test_a_binary_attribute_that_is_not_base64_does_not_fail_the_receive(
    http: ApiClient, engine: Engine, sentinel: Sentinel
) -> None:
    # Given four good messages and one whose Binary attribute is not base64 (as the Zaqar
    # face once stored), on a queue that dead-letters after one receive
    engine.create_queue(ACCOUNT, "dlq", settings=QueueSettings(default_ttl=3600, max_ttl=3600))
    policy = json.dumps({"deadLetterTargetArn": f"{ARN}:dlq", "maxReceiveCount": 1})
    json_call(
        http, "SetQueueAttributes", {"QueueUrl": QUEUE_URL, "Attributes": {"RedrivePolicy": policy}}
    )
    good = [NewMessage(body=f"good {i}".encode()) for i in range(4)]
    bad = NewMessage(body=b"bad", attributes={"blob": Attribute("Binary", "not base64!")})
    engine.send(ACCOUNT, "work", messages=[*good[:2], bad, *good[2:]])
    # When all are received
    r = json_call(
        http,
        "ReceiveMessage",
        {"QueueUrl": QUEUE_URL, "MaxNumberOfMessages": 10, "MessageAttributeNames": ["All"]},
    )
    # Then all five are delivered, the odd value as its own bytes
    assert r.status_code == 200, r.text
    messages = r.json()["Messages"]
    assert sorted(m["Body"] for m in messages) == ["bad", *(f"good {i}" for i in range(4))]
    (odd,) = [m for m in messages if m["Body"] == "bad"]
    value = odd["MessageAttributes"]["blob"]["BinaryValue"]
    assert base64.b64decode(value) == b"not base64!"
    assert odd["MD5OfMessageAttributes"] == message_attrs.md5_of_attributes(
        {"blob": Attribute("Binary", value)}
    )


def test_a_binary_attribute_that_is_not_strict_base64_is_refused(
    http: ApiClient, sentinel: Sentinel
) -> None:
    attribute = {"DataType": "Binary", "BinaryValue": "Zm9v!!"}
    r = json_call(
        http,
        "SendMessage",
        {"QueueUrl": QUEUE_URL, "MessageBody": "x", "MessageAttributes": {"b": attribute}},
    )
    assert error_code(r)[:2] == (400, "InvalidParameterValue")


# 4. NUL bytes ------------------------------------------------------------------------


def _handle_with_nul() -> str:
    return base64.urlsafe_b64encode(f"{uuid.uuid4()}\x00:{uuid.uuid4()}".encode()).decode()


NUL_CASES = [
    ("GetQueueUrl", {"QueueName": "wo\x00rk"}, "InvalidParameterValue"),
    ("CreateQueue", {"QueueName": "wo\x00rk"}, "InvalidParameterValue"),
    ("ListQueues", {"QueueNamePrefix": "w\x00"}, "InvalidParameterValue"),
    ("GetQueueAttributes", {"QueueUrl": QUEUE_URL + "\x00"}, "InvalidParameterValue"),
    ("DeleteMessage", {"QueueUrl": QUEUE_URL, "ReceiptHandle": "a\x00b"}, "InvalidParameterValue"),
    (
        "DeleteMessage",
        {"QueueUrl": QUEUE_URL, "ReceiptHandle": _handle_with_nul()},
        "ReceiptHandleIsInvalid",
    ),
    ("StartMessageMoveTask", {"SourceArn": f"{ARN}:wo\x00rk"}, "InvalidParameterValue"),
    ("ListMessageMoveTasks", {"SourceArn": f"{ARN}:work\x00"}, "InvalidParameterValue"),
    (
        "SetQueueAttributes",
        {"QueueUrl": QUEUE_URL, "Attributes": {"Policy": '{"a": "\x00"}'}},
        "InvalidParameterValue",
    ),
    ("TagQueue", {"QueueUrl": QUEUE_URL, "Tags": {"te\x00am": "x"}}, "InvalidParameterValue"),
    (
        "SendMessage",
        {
            "QueueUrl": QUEUE_URL,
            "MessageBody": "x",
            "MessageAttributes": {"a": {"DataType": "String", "StringValue": "\x00"}},
        },
        "InvalidParameterValue",
    ),
    ("SendMessage", {"QueueUrl": QUEUE_URL, "MessageBody": "a\x00b"}, "InvalidMessageContents"),
    (
        "ListQueues",
        {"NextToken": base64.urlsafe_b64encode(b"w\x00").decode()},
        "InvalidParameterValue",
    ),
]


@PROTOCOLS
@pytest.mark.parametrize(("action", "params", "code"), NUL_CASES)
def test_a_nul_byte_is_refused(
    http: ApiClient,
    sentinel: Sentinel,
    protocol: str,
    action: str,
    params: dict[str, Any],
    code: str,
) -> None:
    r = call(http, protocol, action, params)
    status, got, message = error_code(r)
    assert (status, got) == (404 if code == "ReceiptHandleIsInvalid" else 400, code), message
    assert "\x00" not in r.text


# Characters SQS refuses as a JSON body can carry them: escaped as boto3 writes them (`\b`,
# `\f`, `\uXXXX`), or raw in UTF-8 where a client does not escape. A body that is ASCII and
# has none of those escapes is taken without looking at its texts one by one
# (`wire.clean_json`), so each kind of spelling is tried where a text can be.
REFUSED = ["\x08", "\x0c", "\x01", "\ufffe", "\uffff", "\ud800"]
SPELLINGS = {"escaped": True, "raw": False}  # json.dumps's ensure_ascii


def _json_body(params: dict[str, Any], ensure_ascii: bool) -> bytes:
    return json.dumps(params, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("char", REFUSED)
def test_a_refused_character_in_a_message_body_is_refused_however_it_is_spelled(
    http: ApiClient, sentinel: Sentinel, char: str, spelling: str
) -> None:
    params = {"QueueUrl": QUEUE_URL, "MessageBody": f"a{char}b"}
    r = json_call(http, "SendMessage", _json_body(params, SPELLINGS[spelling]))
    if char == "\ud800":  # a lone surrogate: raw it is not UTF-8, escaped no text at all
        assert error_code(r)[:2] == (400, "SerializationException")
        return
    assert error_code(r)[:2] == (400, "InvalidMessageContents")


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("char", [c for c in REFUSED if c != "\ud800"])
def test_a_refused_character_in_a_batch_fails_its_entry_or_the_request(
    http: ApiClient, sentinel: Sentinel, engine: Engine, char: str, spelling: str
) -> None:
    # Given a batch whose second entry's body holds the character
    entries = [
        {"Id": "good", "MessageBody": "fine"},
        {"Id": "bad", "MessageBody": f"a{char}b"},
    ]
    params = {"QueueUrl": QUEUE_URL, "Entries": entries}
    r = json_call(http, "SendMessageBatch", _json_body(params, SPELLINGS[spelling]))
    # I expect that entry alone to fail, the other sent
    assert r.status_code == 200, r.text
    result = r.json()
    assert [e["Id"] for e in result["Successful"]] == ["good"]
    assert [(e["Id"], e["Code"]) for e in result["Failed"]] == [("bad", "InvalidMessageContents")]
    # and the same character in an entry's id refuses the whole request, nothing sent
    params["Entries"] = [{"Id": f"a{char}", "MessageBody": "x"}]
    r = json_call(http, "SendMessageBatch", _json_body(params, SPELLINGS[spelling]))
    assert error_code(r)[:2] == (400, "InvalidParameterValue")
    assert engine.stats(ACCOUNT, "work").total == 1


@pytest.mark.parametrize(
    ("body", "clean"),
    [
        (b'{"QueueUrl":"q","MessageBody":"{\\"a\\": \\"b\\"}\\n\\t\\r\\/\\\\"}', True),
        (b'{"MessageBody":"a\\bb"}', False),
        (b'{"MessageBody":"a\\fb"}', False),
        (b'{"MessageBody":"a\\u0041b"}', False),  # any \u escape, refused or not
        (b'{"MessageBody":"a\\\\bb"}', False),  # an escaped backslash before b: looked at
        ('{"MessageBody":"\u00e9"}'.encode(), False),  # not ASCII
    ],
)
def test_a_json_body_is_known_clean_only_when_ascii_and_without_risky_escapes(
    body: bytes, clean: bool
) -> None:
    json.loads(body)  # each is JSON
    assert wire.clean_json(body) is clean


def test_a_nul_byte_in_the_queue_path_is_refused(http: ApiClient, sentinel: Sentinel) -> None:
    r = query_call(http, {"Action": "PurgeQueue"}, path=f"/{ACCOUNT}/work%00")
    assert error_code(r)[:2] == (400, "InvalidParameterValue")


# 5. Batches answer per entry ---------------------------------------------------------


@PROTOCOLS
def test_a_batch_entry_with_a_reserved_attribute_fails_alone(
    http: ApiClient, engine: Engine, sentinel: Sentinel, protocol: str
) -> None:
    reserved = {"DLQ.sourceQueue": {"DataType": "String", "StringValue": "elsewhere"}}
    entries = [
        {"Id": "good1", "MessageBody": "one"},
        {"Id": "bad", "MessageBody": "two", "MessageAttributes": reserved},
        {"Id": "good2", "MessageBody": "three"},
    ]
    r = call(http, protocol, "SendMessageBatch", {"QueueUrl": QUEUE_URL, "Entries": entries})
    assert r.status_code == 200, r.text
    if protocol == "json":
        result = r.json()
        ok = sorted(e["Id"] for e in result["Successful"])
        failed = [(e["Id"], e["Code"]) for e in result["Failed"]]
    else:
        root = ET.fromstring(r.content)
        ok = sorted(
            e.findtext(f"{NS}Id") or "" for e in root.iter(f"{NS}SendMessageBatchResultEntry")
        )
        failed = [
            (e.findtext(f"{NS}Id"), e.findtext(f"{NS}Code"))
            for e in root.iter(f"{NS}BatchResultErrorEntry")
        ]
    assert ok == ["good1", "good2"]
    assert failed == [("bad", "InvalidParameterValue")]
    assert engine.stats(ACCOUNT, "work").free == 2


# 6. Policy size, attribute names -----------------------------------------------------


@pytest.mark.parametrize(
    "policy",
    ["x" * 1_000_000, json.dumps({"Statement": ["y" * attrs.MAX_POLICY]}), "not json"],
    ids=["one-megabyte", "just-over", "not-json"],
)
def test_a_policy_sqs_would_refuse_is_refused(
    http: ApiClient, engine: Engine, sentinel: Sentinel, policy: str
) -> None:
    before = engine.get_queue(ACCOUNT, "work").settings
    r = json_call(
        http, "SetQueueAttributes", {"QueueUrl": QUEUE_URL, "Attributes": {"Policy": policy}}
    )
    assert error_code(r)[:2] == (400, "InvalidAttributeValue")
    assert engine.get_queue(ACCOUNT, "work").settings == before


def test_a_policy_within_the_limit_is_kept(http: ApiClient, engine: Engine) -> None:
    engine.create_queue(ACCOUNT, "work")
    policy = json.dumps({"Version": "2012-10-17", "Statement": []})
    r = json_call(
        http, "SetQueueAttributes", {"QueueUrl": QUEUE_URL, "Attributes": {"Policy": policy}}
    )
    assert r.status_code == 200
    assert engine.get_queue(ACCOUNT, "work").settings.extra["Policy"] == policy


@PROTOCOLS
@pytest.mark.parametrize(
    "name", ["AWS.trace", "aws.x", "Amazon.thing", "AMAZON.x", ".lead", "trail.", "a..b", "sp ace"]
)
def test_a_message_attribute_name_sqs_refuses_is_refused(
    http: ApiClient, engine: Engine, sentinel: Sentinel, protocol: str, name: str
) -> None:
    attribute = {name: {"DataType": "String", "StringValue": "v"}}
    r = call(
        http,
        protocol,
        "SendMessage",
        {"QueueUrl": QUEUE_URL, "MessageBody": "x", "MessageAttributes": attribute},
    )
    assert error_code(r)[:2] == (400, "InvalidParameterValue")
    assert engine.stats(ACCOUNT, "work").free == 0


# 7. Sizes ----------------------------------------------------------------------------


def test_the_maximum_message_size_is_the_smaller_of_sqs_and_the_engine(
    http: ApiClient, sentinel: Sentinel
) -> None:
    assert attrs.SQS_MAX_MESSAGE_SIZE == 1_048_576
    r = json_call(http, "CreateQueue", {"QueueName": "sized"})
    assert r.status_code == 200
    r = json_call(
        http,
        "GetQueueAttributes",
        {"QueueUrl": f"{BASE_URL}/{ACCOUNT}/sized", "AttributeNames": ["MaximumMessageSize"]},
    )
    assert r.json()["Attributes"]["MaximumMessageSize"] == str(attrs.MAX_SIZE)
    over = {"MaximumMessageSize": str(attrs.MAX_SIZE + 1)}
    r = json_call(http, "SetQueueAttributes", {"QueueUrl": QUEUE_URL, "Attributes": over})
    assert error_code(r)[:2] == (400, "InvalidAttributeValue")


def test_a_batch_larger_than_the_limit_in_total_is_refused(
    http: ApiClient, engine: Engine, sentinel: Sentinel
) -> None:
    # Each entry fits alone; their bodies and attributes together do not.
    size = attrs.MAX_SIZE // 10
    attribute = {"a": {"DataType": "String", "StringValue": "v" * 100}}
    entries = [
        {"Id": f"e{i}", "MessageBody": "x" * size, "MessageAttributes": attribute}
        for i in range(10)
    ]
    r = json_call(http, "SendMessageBatch", {"QueueUrl": QUEUE_URL, "Entries": entries})
    assert error_code(r)[:2] == (400, "AWS.SimpleQueueService.BatchRequestTooLong")
    assert engine.stats(ACCOUNT, "work").free == 0


# 8. Failures that are not the client's are logged ------------------------------------


@PROTOCOLS
def test_a_result_that_cannot_be_written_is_a_logged_internal_failure(
    http: ApiClient,
    sentinel: Sentinel,
    protocol: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    failure = RuntimeError("cannot write")

    def broken(*args: object, **kwargs: object) -> str:
        raise failure

    def broken_results(content: Any, status_code: int = 200, **kwargs: Any) -> JSONResponse:
        if status_code == 200:
            raise failure
        return JSONResponse(content, status_code, **kwargs)

    monkeypatch.setattr(wire, "xml_response", broken)
    monkeypatch.setattr("deadletter.api.sqs.routes.JSONResponse", broken_results)
    with caplog.at_level(logging.ERROR, logger="deadletter.api.sqs.errors"):
        r = call(http, protocol, "ListQueues", {})
    assert error_code(r)[:2] == (500, "InternalFailure")
    (record,) = [rec for rec in caplog.records if rec.name == "deadletter.api.sqs.errors"]
    assert record.exc_info is not None and record.exc_info[1] is failure
