"""StartMessageMoveTask's `DeadLetterFilter` extension: the native API's filter language as one
query string, in either protocol; what it selects moves, a bad one is InvalidParameterValue."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from deadletter.engine.engine import Engine
from tests.api.sqs.test_unknown_parameters import PROTOCOLS, call, error
from tests.api.zaqar.conftest import CLIENT_ID, ApiClient
from tests.support.blank_values import BLANKS, MATRIX
from tests.support.sqs_fuzz import ACCOUNT

ARN = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-dlq"
ZAQAR = {"Client-ID": CLIENT_ID, "X-Project-ID": ACCOUNT}


def given_two_dead_letters(http: ApiClient) -> None:
    """Given orders-dlq holding a KeyError and a ValueError of orders."""
    assert http.put("/v2/queues/orders-dlq", json={}, headers=ZAQAR).status_code == 201
    policy = {"_max_claim_count": 3, "_dead_letter_queue": "orders-dlq"}
    assert http.put("/v2/queues/orders", json=policy, headers=ZAQAR).status_code == 201
    for n, cls in ((1, "KeyError"), (2, "ValueError")):
        r = http.post("/v2/queues/orders/messages", json={"messages": [{"body": {"n": n}}]},
                      headers=ZAQAR)  # fmt: skip
        mid = r.json()["resources"][0].rsplit("/", 1)[1]
        r = http.post("/v2/queues/orders/claims?limit=1", json={}, headers=ZAQAR)
        cid = r.headers["Location"].rsplit("/", 1)[1]
        r = http.post(f"/v2/queues/orders/messages/{mid}/dead_letter?claim_id={cid}",
                      json={"error": {"class": cls}}, headers=ZAQAR)  # fmt: skip
        assert r.status_code == 200, r.text


@PROTOCOLS
def test_a_move_task_moves_what_its_filter_selects(
    http: ApiClient,
    engine: Engine,
    protocol: str,
) -> None:
    given_two_dead_letters(http)
    params = {"SourceArn": ARN, "DeadLetterFilter": "error_class=KeyError&reason=rejected"}
    r = call(http, protocol, "StartMessageMoveTask", params)
    assert r.status_code == 200, r.text
    (task,) = engine.list_tasks(ACCOUNT, "orders-dlq")
    assert task.to_move == 1
    while engine.redrive_step(task.id, 10).status.value == "RUNNING":
        pass
    left = engine.list_dead_letters(ACCOUNT, "orders-dlq")
    assert [json.loads(m.body) for m in left] == [{"n": 2}]


@pytest.mark.one_store
@PROTOCOLS
@pytest.mark.parametrize(
    ("text", "named"),
    [("error_class=A&error_class=B", "error_class"), ("older_than=soon", "older_than"),
     ("colour=red", "colour"), ("=x", "blank name")],
)  # fmt: skip
def test_a_bad_move_task_filter_is_refused_and_starts_nothing(
    http: ApiClient,
    engine: Engine,
    protocol: str,
    text: str,
    named: str,
) -> None:
    given_two_dead_letters(http)
    r = call(http, protocol, "StartMessageMoveTask", {"SourceArn": ARN, "DeadLetterFilter": text})
    status, code, message = error(r)
    assert (status, code) == (400, "InvalidParameterValue"), message
    assert named in message
    assert engine.list_tasks(ACCOUNT, "orders-dlq") == []


@PROTOCOLS
def test_a_blank_move_task_filter_is_refused_naming_it_and_starts_nothing(
    http: ApiClient, engine: Engine, counted: list[str], protocol: str
) -> None:
    # Given two dead letters, any blank value of any name (or a blank filter as a whole),
    # alone or beside a good one, starts no task that would move the whole DLQ
    given_two_dead_letters(http)
    cases = [(f"{key}={quote(value)}", key) for key, value in MATRIX]
    cases += [(f"reason=rejected&{text}", key) for text, key in cases[:: len(BLANKS)]]
    cases += [(value, "DeadLetterFilter") for value in BLANKS]
    for text, named in cases:
        counted.clear()
        r = call(
            http, protocol, "StartMessageMoveTask", {"SourceArn": ARN, "DeadLetterFilter": text}
        )
        status, code, message = error(r)
        assert (status, code) == (400, "InvalidParameterValue"), (text, message)
        assert named in message, (text, message)
        assert "write" not in counted, text
    assert engine.list_tasks(ACCOUNT, "orders-dlq") == []
    assert len(engine.list_dead_letters(ACCOUNT, "orders-dlq")) == 2


@pytest.mark.one_store
def test_a_move_task_takes_a_saved_filter_by_name(http: ApiClient, engine: Engine) -> None:
    given_two_dead_letters(http)
    r = http.put("/v2/queues/orders-dlq/dead_letters/filters/keys",
                 json={"error_class": "KeyError"}, headers=ZAQAR)  # fmt: skip
    assert r.status_code == 201, r.text
    params = {"SourceArn": ARN, "DeadLetterFilter": "filter=keys"}
    r = call(http, "json", "StartMessageMoveTask", params)
    assert r.status_code == 200, r.text
    (task,) = engine.list_tasks(ACCOUNT, "orders-dlq")
    assert (task.to_move, task.filter.saved) == (1, "keys")
    while engine.redrive_step(task.id, 10).status.value == "RUNNING":
        pass
    # A name the DLQ has not saved starts nothing
    params = {"SourceArn": ARN, "DeadLetterFilter": "filter=nope"}
    r = call(http, "json", "StartMessageMoveTask", params)
    assert r.status_code == 400 and "nope" in r.text, r.text
    assert len(engine.list_tasks(ACCOUNT, "orders-dlq")) == 1
