"""What an SQS client gets, in either protocol, when an action fails unexpectedly."""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET

import pytest

from deadletter.domain import errors
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient

# The answer to a failure is shaped by the face; the store is never reached (tests/README.md).
pytestmark = pytest.mark.one_store

NS = {"sqs": "http://queue.amazonaws.com/doc/2012-11-05/"}
JSON_HEADERS = {
    "X-Amz-Target": "AmazonSQS.ListQueues",
    "Content-Type": "application/x-amz-json-1.0",
}


@pytest.fixture(
    params=[RuntimeError("disk on fire"), ValueError("disk on fire"), errors.DeadletterError()],
    ids=["not-a-domain-error", "value-error", "unmapped-domain-error"],
)
def failure(
    request: pytest.FixtureRequest, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> Exception:
    """Given an engine whose list_queues fails in a way no table foresees."""
    exc: Exception = request.param

    def broken(*args: object, **kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(engine, "list_queues", broken)
    return exc


def _logged(caplog: pytest.LogCaptureFixture, failure: Exception) -> None:
    (record,) = [r for r in caplog.records if r.name == "deadletter.api.sqs.errors"]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and record.exc_info[1] is failure


def test_json_protocol_gets_an_internal_failure(
    http: ApiClient, failure: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="deadletter.api.sqs.errors"):
        r = http.post("/", content=b"{}", headers=JSON_HEADERS)
    assert r.status_code == 500
    assert r.json() == {
        "__type": "com.amazonaws.sqs#InternalFailure",
        "message": "The request failed; see logs.",
    }
    assert r.headers["x-amzn-query-error"] == "InternalFailure;Receiver"
    _logged(caplog, failure)


def test_query_protocol_gets_an_internal_failure(
    http: ApiClient, failure: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="deadletter.api.sqs.errors"):
        r = http.post("/", data={"Action": "ListQueues", "Version": "2012-11-05"})
    assert r.status_code == 500
    assert r.headers["content-type"].startswith("text/xml")
    root = ET.fromstring(r.text)
    assert root.findtext("sqs:Error/sqs:Code", namespaces=NS) == "InternalFailure"
    assert root.findtext("sqs:Error/sqs:Type", namespaces=NS) == "Receiver"
    assert "disk on fire" not in r.text
    _logged(caplog, failure)


def test_a_body_that_is_not_json_is_still_the_clients_fault(
    http: ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="deadletter.api.sqs.errors"):
        r = http.post("/", content=b"{not json", headers=JSON_HEADERS)
    assert r.status_code == 400
    assert r.json()["__type"] == "com.amazonaws.sqs#SerializationException"
    assert not [r for r in caplog.records if r.name == "deadletter.api.sqs.errors"]


def test_a_binary_attribute_that_is_not_base64_is_refused_before_sending(
    http: ApiClient, engine: Engine
) -> None:
    engine.create_queue("123456789012", "q")
    r = http.post(
        "/123456789012/q",
        data={
            "Action": "SendMessage",
            "MessageBody": "hello",
            "MessageAttribute.1.Name": "blob",
            "MessageAttribute.1.Value.DataType": "Binary",
            "MessageAttribute.1.Value.BinaryValue": "abc",
        },
    )
    assert r.status_code == 400
    root = ET.fromstring(r.text)
    assert root.findtext("sqs:Error/sqs:Code", namespaces=NS) == "InvalidParameterValue"
    assert engine.stats("123456789012", "q").total == 0
