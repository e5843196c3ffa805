"""Adversarial: credentials of every role of one project against the other project's queues,
messages, claims and redrive tasks on both faces (by name, URL and ARN), and forged, expired
and header-swapped requests. None may succeed; inside its own project each role succeeds
exactly where docs/security.md's table says so."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from deadletter.auth import tokens
from deadletter.engine.credentials import Role
from deadletter.storage.base import Store
from tests.auth.live import Live, boto, live_server, query_call, zaqar

PROJECT_ROLES = ["admin", "producer", "consumer", "reader"]
# Projects named by their account ids, so both faces reach the same queues.
ALPHA, BETA = "111111111111", "222222222222"


@pytest.fixture
def live(store: Store) -> Iterator[Live]:
    with live_server(store) as server:
        yield server


def _victim(live: Live) -> dict[str, Any]:
    """Project beta: a queue with a DLQ, a message, a claim and a redrive task."""
    admin, secret = live.issue(BETA, "admin")
    sqs = boto(live.url, admin.key_id, secret)
    sqs.create_queue(QueueName="b-dlq")
    dlq_arn = f"arn:aws:sqs:us-east-1:{admin.account_id}:b-dlq"
    policy = f'{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"1"}}'
    url = sqs.create_queue(QueueName="b-jobs", Attributes={"RedrivePolicy": policy})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="secret")
    token = f"{admin.key_id}:{secret}"
    claim = zaqar(live.url, "POST", "/v2/queues/b-jobs/claims", token=token, json={"ttl": 3600})
    message_id = claim.json()["messages"][0]["id"] if claim.status_code == 201 else "m"
    claim_id = claim.headers.get("location", "/x").rsplit("/", 1)[1]
    task = live.engine.start_redrive(BETA, "b-dlq", destination=None, where=None, rate=None)
    return {
        "account": admin.account_id,
        "url": url,
        "dlq_arn": dlq_arn,
        "message_id": message_id,
        "claim_id": claim_id,
        "task_id": task.id,
    }


def _zaqar_attempts(v: dict[str, Any]) -> list[tuple[str, str, Any]]:
    q, m, c, t = "/v2/queues/b-jobs", v["message_id"], v["claim_id"], v["task_id"]
    return [
        ("GET", "/v2/queues", None),
        ("GET", q, None),
        ("PUT", "/v2/queues/b-new", {}),
        ("PATCH", q, [{"op": "add", "path": "/metadata/x", "value": 1}]),
        ("DELETE", q, None),
        ("GET", q + "/stats", None),
        ("POST", q + "/purge", {}),
        ("POST", q + "/share", {}),
        ("POST", q + "/messages", {"messages": [{"body": 1}]}),
        ("GET", q + "/messages?echo=true&include_claimed=true", None),
        ("GET", f"{q}/messages?ids={m}", None),
        ("DELETE", f"{q}/messages?pop=1", None),
        ("GET", f"{q}/messages/{m}", None),
        ("DELETE", f"{q}/messages/{m}?claim_id={c}", None),
        ("POST", f"{q}/messages/{m}/release?claim_id={c}", {}),
        ("POST", f"{q}/messages/{m}/dead_letter?claim_id={c}", {}),
        ("POST", q + "/claims", {"ttl": 60}),
        ("GET", f"{q}/claims/{c}", None),
        ("PATCH", f"{q}/claims/{c}", {"ttl": 90}),
        ("DELETE", f"{q}/claims/{c}", None),
        ("GET", "/v2/queues/b-dlq/dead_letters", None),
        ("GET", "/v2/queues/b-dlq/dead_letter_sources", None),
        ("POST", "/v2/queues/b-dlq/redrives", {}),
        ("GET", "/v2/queues/b-dlq/redrives", None),
        ("GET", f"/v2/queues/b-dlq/redrives/{t}", None),
        ("DELETE", f"/v2/queues/b-dlq/redrives/{t}", None),
        ("GET", "/v2/queues/b-dlq/patterns", None),
        ("PUT", "/v2/queues/b-dlq/patterns", {"patterns": []}),
        (
            "POST",
            "/v2/queues/b-dlq/patterns/assignments",
            {"writer": "w", "batch": 0, "assignments": [{"message_id": m, "pattern_id": "p"}]},
        ),
        ("GET", f"/v2/credentials?project={BETA}", None),
        ("POST", "/v2/credentials", {"role": "admin", "project": BETA}),
    ]


def _sqs_attempts(sqs: Any, v: dict[str, Any]) -> list[Callable[[], Any]]:
    url, arn = v["url"], v["dlq_arn"]
    return [
        lambda: sqs.get_queue_url(QueueName="b-jobs", QueueOwnerAWSAccountId=v["account"]),
        lambda: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]),
        lambda: sqs.send_message(QueueUrl=url, MessageBody="x"),
        lambda: sqs.receive_message(QueueUrl=url),
        lambda: sqs.purge_queue(QueueUrl=url),
        lambda: sqs.delete_queue(QueueUrl=url),
        lambda: sqs.set_queue_attributes(QueueUrl=url, Attributes={"DelaySeconds": "1"}),
        lambda: sqs.tag_queue(QueueUrl=url, Tags={"a": "b"}),
        lambda: sqs.list_queue_tags(QueueUrl=url),
        lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle="x", VisibilityTimeout=1),
        lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle="x"),
        lambda: sqs.list_dead_letter_source_queues(QueueUrl=url.replace("b-jobs", "b-dlq")),
        lambda: sqs.start_message_move_task(SourceArn=arn),
        lambda: sqs.list_message_move_tasks(SourceArn=arn),
        lambda: sqs.cancel_message_move_task(TaskHandle=v["task_id"]),
        lambda: sqs.create_queue(
            QueueName="mine",
            Attributes={
                "RedrivePolicy": f'{{"deadLetterTargetArn":"{arn}","maxReceiveCount":"1"}}'
            },
        ),
    ]


def _body(method: str, body: Any) -> dict[str, Any]:
    if body is None:
        return {}
    if method == "PATCH":
        patch = "application/openstack-messaging-v2.0-json-patch"
        return {"content": json.dumps(body), "headers": {"Content-Type": patch}}
    return {"json": body}


def _succeeded(call: Callable[[], Any]) -> bool:
    try:
        call()
    except ClientError:
        return False
    return True


def _unchanged(live: Live, v: dict[str, Any]) -> None:
    """Beta's state after the attack: nothing moved, nothing new."""
    names = {q.name for q in live.engine.list_queues(v["account"], limit=100)}
    assert names == {"b-jobs", "b-dlq"}
    stats = live.engine.stats(v["account"], "b-jobs")
    assert (stats.total, stats.claimed, stats.acknowledged) == (1, 1, 0)


def test_no_credential_of_another_project_reaches_beta(live: Live) -> None:
    v = _victim(live)
    attempts = successes = 0
    for role in [*PROJECT_ROLES]:
        credential, secret = live.issue(ALPHA, role)
        token = f"{credential.key_id}:{secret}"
        # Without X-Project-ID a request acts in the caller's own project: not an attack.
        for project in (BETA, "beta"):
            for method, path, body in _zaqar_attempts(v):
                kwargs = _body(method, body)
                answer = zaqar(live.url, method, path, token=token, project=project, **kwargs)
                attempts += 1
                successes += answer.status_code < 400
        sqs = boto(live.url, credential.key_id, secret)
        for call in _sqs_attempts(sqs, v):
            attempts += 1
            successes += _succeeded(call)
        # The query protocol at beta's queue URL path.
        for action in ("SendMessage", "ReceiveMessage", "PurgeQueue", "GetQueueAttributes"):
            answer = query_call(
                live.url, credential.key_id, secret, f"/{v['account']}/b-jobs",
                Action=action, MessageBody="x",
            )  # fmt: skip
            attempts += 1
            successes += answer.status_code < 400
    print(f"cross-project attempts: {attempts}, succeeded: {successes}")
    assert attempts > 300
    assert successes == 0
    _unchanged(live, v)


def test_forged_expired_and_swapped_requests_fail(live: Live) -> None:
    v = _victim(live)
    alpha, secret = live.issue(ALPHA, "admin")
    beta_admin = next(c for c in live.authority.list_for(BETA) if c.role is Role.ADMIN)
    forged_token = tokens.issue_token(b"k" * 32, beta_admin, time.time())
    expired = tokens.issue_token(
        live.authority.master.token_key, beta_admin, time.time() - 7200, ttl=60
    )
    own = tokens.issue_token(live.authority.master.token_key, alpha, time.time())
    body, sig = own.split(".")[1:]
    beta_token = tokens.issue_token(live.authority.master.token_key, beta_admin, time.time())
    swapped = f"dlt1.{beta_token.split('.')[1]}.{sig}"
    attempts = successes = 0
    for token in (forged_token, expired, swapped, f"{beta_admin.key_id}:{secret}", "", body):
        for project in (BETA, None):
            answer = zaqar(live.url, "GET", "/v2/queues/b-jobs/messages?echo=true",
                           token=token or None, project=project)  # fmt: skip
            attempts += 1
            successes += answer.status_code < 400
    # SigV4: beta's key id with alpha's secret; a request signed by alpha sent with beta's key
    # id swapped into the Authorization header; a signature replayed on another body.
    for key_id, key_secret in ((beta_admin.key_id, secret), ("DLAK" + "A" * 16, secret)):
        answer = query_call(live.url, key_id, key_secret, "/", Action="ListQueues")
        attempts += 1
        successes += answer.status_code < 400
    good = query_call(live.url, alpha.key_id, secret, "/", Action="ListQueues")
    assert good.status_code == 200
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method="POST", url=live.url + "/", data="Action=ListQueues",
                         headers={"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
    SigV4Auth(Credentials(alpha.key_id, secret), "sqs", "us-east-1").add_auth(request)
    headers = dict(request.headers.items())
    swapped_header = {**headers, "Authorization": headers["Authorization"].replace(
        alpha.key_id, beta_admin.key_id)}  # fmt: skip
    for sent_headers, sent_body in (
        (swapped_header, "Action=ListQueues"),
        (headers, f"Action=PurgeQueue&QueueUrl={v['url']}"),
        ({**headers, "X-Amz-Date": "20000101T000000Z"}, "Action=ListQueues"),
    ):
        answer = httpx.post(live.url + "/", content=sent_body, headers=sent_headers)
        attempts += 1
        successes += answer.status_code < 400
    print(f"forged attempts: {attempts}, succeeded: {successes}")
    assert successes == 0
    _unchanged(live, v)


# What each project role may do in its own project, by Zaqar request (a subset of the table).
OWN: list[tuple[str, str, Any, set[str]]] = [
    ("GET", "/v2/queues/jobs", None, {"admin", "producer", "consumer", "reader"}),
    ("POST", "/v2/queues/jobs/messages", {"messages": [{"body": 1}]}, {"admin", "producer"}),
    ("GET", "/v2/queues/jobs/messages?echo=true", None, {"admin", "reader"}),
    ("GET", "/v2/queues/jobs/stats", None, {"admin", "reader"}),
    ("POST", "/v2/queues/jobs/claims", {"ttl": 60}, {"admin", "consumer"}),
    ("GET", "/v2/queues/jobs/redrives", None, {"admin", "reader"}),
    (
        "PATCH",
        "/v2/queues/jobs",
        [{"op": "add", "path": "/metadata/x", "value": 1}],
        {"admin"},
    ),
    ("POST", "/v2/queues/jobs/purge", {}, {"admin"}),
    ("GET", "/v2/health", None, set()),
]


def test_each_role_does_what_its_role_allows_in_its_own_project(live: Live) -> None:
    admin, admin_secret = live.issue(ALPHA, "admin")
    zaqar(live.url, "PUT", "/v2/queues/jobs", token=f"{admin.key_id}:{admin_secret}")
    for role in PROJECT_ROLES:
        credential, secret = live.issue(ALPHA, role)
        token = f"{credential.key_id}:{secret}"
        for method, path, body, allowed in OWN:
            kwargs = _body(method, body)
            answer = zaqar(live.url, method, path, token=token, **kwargs)
            expected = role in allowed
            assert (answer.status_code < 400) == expected, (role, method, path, answer.text)
            if not expected:
                assert answer.status_code == 403, (role, method, path)
        sqs = boto(live.url, credential.key_id, secret)
        url = sqs.get_queue_url(QueueName="jobs")["QueueUrl"] if role != "x" else ""
        assert _succeeded(lambda s=sqs, u=url: s.send_message(QueueUrl=u, MessageBody="y")) == (
            role in {"admin", "producer"}
        )
        assert _succeeded(lambda s=sqs, u=url: s.receive_message(QueueUrl=u)) == (
            role in {"admin", "consumer"}
        )
