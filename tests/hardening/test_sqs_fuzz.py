"""A seeded fuzzer for the SQS face: valid requests from botocore's model for every action the
face implements, damaged, in both protocols, against the real app on each store.

Given a sentinel message on a queue no request names, when a few hundred damaged requests
reach the face, I expect no 5xx, every error in its protocol's error format, and the sentinel
exactly as it was. `DEADLETTER_FUZZ_CASES` (per protocol and store) and `DEADLETTER_FUZZ_SEED`
widen a run.
"""

from __future__ import annotations

import base64
import json
import os
import random
import uuid
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from deadletter.api.app import build_app
from deadletter.api.sqs.actions import ASYNC_ACTIONS, SYNC_ACTIONS
from deadletter.domain.model import NewMessage, QueueSettings
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient
from tests.support import sqs_fuzz
from tests.support.clients import in_process
from tests.support.sqs_fuzz import ACCOUNT, Case, Pool, Sentinel

REGION = "us-east-1"
BASE_URL = "http://testserver"
NS = "{http://queue.amazonaws.com/doc/2012-11-05/}"
CASES = int(os.environ.get("DEADLETTER_FUZZ_CASES", "150"))
SEED = int(os.environ.get("DEADLETTER_FUZZ_SEED", "20250611"))
QUEUES = ["fuzz", "fuzz-2"]
DLQ = "fuzz-dlq"
REFILL_EVERY = 50
# Actions that end the fuzz queues' contents are drawn less often, so the others find some.
RARE = {"DeleteQueue": 0.1, "PurgeQueue": 0.3}


@pytest.fixture
def http(engine: Engine) -> Iterator[ApiClient]:
    with in_process(build_app(engine)) as client:
        yield client


def _handle(claim_id: str, message_id: str) -> str:
    return base64.urlsafe_b64encode(f"{claim_id}:{message_id}".encode()).decode()


def _ensure_queues(engine: Engine) -> None:
    for name in (DLQ, *QUEUES):
        if engine.find_queue(ACCOUNT, name) is None:
            engine.create_queue(
                ACCOUNT, name, settings=QueueSettings(default_ttl=3600, max_ttl=3600)
            )


def _refill(engine: Engine, pool: Pool, sentinel: Sentinel) -> None:
    """The fuzz queues hold messages, and the pool has live receipt handles (and a forged one
    naming the sentinel)."""
    _ensure_queues(engine)
    for name in (DLQ, *QUEUES):
        engine.send(ACCOUNT, name, messages=[NewMessage(body=b"fodder") for _ in range(3)])
    claim = engine.claim(ACCOUNT, QUEUES[0], limit=2, ttl=600)
    pool.handles = [_handle(claim.id, m.id) for m in claim.messages]
    pool.handles.append(_handle(str(uuid.uuid4()), sentinel.message_id))


def _error_format(case: Case, response: httpx.Response) -> str | None:
    """What is wrong with a response's form for its protocol, if anything."""
    if case.protocol == "json":
        try:
            body = json.loads(response.content)
        except ValueError:
            return "body is not JSON"
        if response.status_code == 200:
            return None if isinstance(body, dict) else "result is not an object"
        if not (
            isinstance(body, dict)
            and isinstance(body.get("__type"), str)
            and body["__type"].startswith("com.amazonaws.sqs#")
            and isinstance(body.get("message"), str)
            and ";" in response.headers.get("x-amzn-query-error", "")
        ):
            return f"not an SQS JSON error: {response.text[:200]}"
        return None
    try:
        root = ET.fromstring(response.content)
    except ET.ParseError as exc:
        return f"body is not XML: {exc}"
    if response.status_code == 200:
        return None if root.tag.endswith("Response") else f"unexpected root {root.tag}"
    code = root.find(f"{NS}Error/{NS}Code")
    kind = root.find(f"{NS}Error/{NS}Type")
    if root.tag != f"{NS}ErrorResponse" or code is None or not code.text or kind is None:
        return f"not an SQS XML error: {response.text[:200]}"
    return None


@pytest.mark.parametrize("protocol", ["json", "query"])
def test_damaged_requests_never_fail_the_server_nor_touch_other_queues(
    http: ApiClient, engine: Engine, protocol: str
) -> None:
    # Given the fuzz queues, live receipt handles and a sentinel message elsewhere
    rng = random.Random(f"{SEED}-{protocol}")
    sentinel = Sentinel.plant(engine)
    pool = Pool(BASE_URL, ACCOUNT, REGION, [*QUEUES, DLQ], DLQ)
    ops = sqs_fuzz.operations(set(SYNC_ACTIONS) | set(ASYNC_ACTIONS))
    assert len(ops) == len(SYNC_ACTIONS) + len(ASYNC_ACTIONS)
    weights = [RARE.get(op.name, 1.0) for op in ops]
    statuses: Counter[int] = Counter()
    problems: list[str] = []
    # When damaged requests for every action arrive
    for number in range(CASES):
        if number % REFILL_EVERY == 0:
            _refill(engine, pool, sentinel)
        elif number % 5 == 0:
            _ensure_queues(engine)
        (op,) = rng.choices(ops, weights)
        params = sqs_fuzz.valid(op, rng, pool)
        story: list[str] = []
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            sqs_fuzz.mutate(params, rng, story)
        make = sqs_fuzz.json_request if protocol == "json" else sqs_fuzz.query_request
        case = make(op.name, params, rng, story)
        url = params.get("QueueUrl")
        # Sometimes posted to the queue's URL instead, as older SDKs do.
        to_url = protocol == "query" and isinstance(url, str) and url.startswith(BASE_URL)
        if to_url and rng.random() < 0.2:
            assert isinstance(url, str)
            rest = {k: v for k, v in params.items() if k != "QueueUrl"}
            case = make(op.name, rest, rng, story)
            case.path = quote(url[len(BASE_URL) :], safe="/", errors="surrogatepass")
        response = http.post(case.path, content=case.body, headers=case.headers)
        statuses[response.status_code] += 1
        # I expect no 5xx and every answer in its protocol's form
        if response.status_code >= 500:
            problems.append(f"{response.status_code} for {case.describe()}: {response.text[:300]}")
        elif (wrong := _error_format(case, response)) is not None:
            problems.append(f"{wrong} for {case.describe()}")
        if number % REFILL_EVERY == REFILL_EVERY - 1:
            sentinel.check(engine, case.describe())
    # and the sentinel exactly as it was
    sentinel.check(engine, "the run")
    fives = sum(n for status, n in statuses.items() if status >= 500)
    print(f"\n{protocol}: {CASES} cases, statuses {dict(sorted(statuses.items()))}, 5xx {fives}")
    assert not problems, f"{len(problems)} bad answers; first: " + "\n".join(problems[:5])
