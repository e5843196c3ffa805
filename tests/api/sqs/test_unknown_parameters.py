"""Every SQS action refuses a parameter it does not take, in either protocol: the action table
is walked, each action is sent an unknown parameter (and each batch action an unknown entry
field), and each is refused with InvalidParameterValue naming it, before anything is
written. The parameters each action takes are compared with botocore's model of SQS."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import botocore.session
import httpx
import pytest

from deadletter.api.sqs import wire
from deadletter.api.sqs.actions import ASYNC_ACTIONS, SYNC_ACTIONS
from deadletter.api.sqs.parameters import ENTRY_FIELDS, EXTENSIONS, PARAMETERS
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient
from tests.support.sqs_fuzz import ACCOUNT, Sentinel, query_fields

BASE_URL = "http://testserver"
NS = "{http://queue.amazonaws.com/doc/2012-11-05/}"
QUEUE_URL = f"{BASE_URL}/{ACCOUNT}/work"
ACTIONS = sorted([*SYNC_ACTIONS, *ASYNC_ACTIONS])


def call(http: ApiClient, protocol: str, action: str, params: dict[str, Any]) -> httpx.Response:
    if protocol == "json":
        headers = {"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": wire.JSON_CONTENT_TYPE}
        return http.post("/", content=json.dumps(params).encode(), headers=headers)
    fields = query_fields(action, params)
    return http.post(
        "/",
        content=str(httpx.QueryParams(fields)).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )


def error(r: httpx.Response) -> tuple[int, str, str]:
    if r.headers["content-type"].startswith("text/xml"):
        root = ET.fromstring(r.content)
        code = root.findtext(f"{NS}Error/{NS}Code") or ""
        return r.status_code, code, root.findtext(f"{NS}Error/{NS}Message") or ""
    return r.status_code, r.headers["x-amzn-query-error"].split(";")[0], r.json()["message"]


PROTOCOLS = pytest.mark.parametrize("protocol", ["json", "query"])


@PROTOCOLS
@pytest.mark.parametrize("action", ACTIONS)
def test_every_action_refuses_an_unknown_parameter(
    http: ApiClient,
    engine: Engine,
    sentinel: Sentinel,
    counted: list[str],
    protocol: str,
    action: str,
) -> None:
    queues = engine.list_queues(ACCOUNT, limit=100)
    counted.clear()
    r = call(http, protocol, action, {"QueueUrl": QUEUE_URL, "BogusParameter": "1"})
    status, code, message = error(r)
    assert (status, code) == (400, "InvalidParameterValue"), message
    assert '"BogusParameter"' in message
    # Refused before the action runs: no transaction opened, let alone a write.
    assert counted == []
    assert engine.list_queues(ACCOUNT, limit=100) == queues


@PROTOCOLS
@pytest.mark.parametrize("action", sorted(ENTRY_FIELDS))
def test_every_batch_action_refuses_an_unknown_entry_field(
    http: ApiClient, engine: Engine, sentinel: Sentinel, protocol: str, action: str
) -> None:
    entry = {"Id": "a", "MessageBody": "x", "ReceiptHandle": "h", "VisibilityTimeout": 1}
    entry = {k: v for k, v in entry.items() if k in ENTRY_FIELDS[action]}
    params = {"QueueUrl": QUEUE_URL, "Entries": [{**entry, "DelaySecond": "1"}]}
    status, code, message = error(call(http, protocol, action, params))
    assert (status, code) == (400, "InvalidParameterValue"), message
    assert '"DelaySecond"' in message
    if action == "SendMessageBatch":
        assert 'did you mean "DelaySeconds"?' in message
    assert engine.stats(ACCOUNT, "work").total == 0


@PROTOCOLS
def test_a_misspelled_parameter_is_named_with_the_one_meant(
    http: ApiClient, engine: Engine, sentinel: Sentinel, protocol: str
) -> None:
    params = {"QueueUrl": QUEUE_URL, "MessageBody": "x", "DelaySecond": "30"}
    status, code, message = error(call(http, protocol, "SendMessage", params))
    assert (status, code) == (400, "InvalidParameterValue")
    assert 'Unknown parameter "DelaySecond"; did you mean "DelaySeconds"?' in message
    assert engine.stats(ACCOUNT, "work").total == 0


def test_an_unknown_field_of_a_message_attribute_value_is_refused(
    http: ApiClient, engine: Engine, sentinel: Sentinel
) -> None:
    attributes = {"a": {"DataType": "String", "StringValue": "x", "StringValues": "y"}}
    params = {"QueueUrl": QUEUE_URL, "MessageBody": "x", "MessageAttributes": attributes}
    status, code, message = error(call(http, "json", "SendMessage", params))
    assert (status, code) == (400, "InvalidParameterValue")
    assert '"StringValues"' in message
    assert engine.stats(ACCOUNT, "work").total == 0


def test_the_parameters_are_those_of_botocores_model() -> None:
    """What each action takes is what AWS's model says it takes (the query protocol's
    `Tag.N` of CreateQueue arrives as `Tags` beside the JSON protocol's `tags`)."""
    model = botocore.session.get_session().get_service_model("sqs")
    assert set(PARAMETERS) == set(ACTIONS)
    for action in ACTIONS:
        shape = model.operation_model(action).input_shape
        expected = set(shape.members) if shape is not None else set()
        if action == "CreateQueue":
            expected.add("Tags")
        if action == "StartMessageMoveTask":
            expected |= EXTENSIONS
        assert set(PARAMETERS[action]) == expected, action
    for action, fields in ENTRY_FIELDS.items():
        entry = model.shape_for(f"{action}RequestEntry")
        assert set(fields) == set(entry.members), action
