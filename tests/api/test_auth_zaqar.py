"""The Zaqar face with authentication required: tokens, roles, projects, signed URLs,
python-zaqarclient, /metrics and the admin API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from zaqarclient.queues import client as zaqar_client

from deadletter.auth.roles import Action, Role, allowed
from deadletter.engine.deliveries import Deliveries, DeliverySettings
from deadletter.storage.base import Store
from tests.auth.live import Live, live_server, zaqar
from tests.support.receivers import WAIT, allow_local, receiving


@pytest.fixture
def live(store: Store) -> Iterator[Live]:
    with live_server(store) as server:
        yield server


def _token(live: Live, key_id: str, secret: str) -> str:
    answer = httpx.post(live.url + "/v2/auth/tokens", json={"key_id": key_id, "secret": secret})
    assert answer.status_code == 201, answer.text
    assert answer.json()["expires_at"] > 0
    return str(answer.json()["token"])


def test_token_or_credential_required(live: Live) -> None:
    credential, secret = live.issue("alpha", "admin")
    assert zaqar(live.url, "GET", "/v2/queues").status_code == 401
    assert zaqar(live.url, "GET", "/v2/queues", token="dlt1.abc.def").status_code == 401
    assert zaqar(live.url, "GET", "/v2/ping").status_code == 204
    token = _token(live, credential.key_id, secret)
    assert zaqar(live.url, "PUT", "/v2/queues/jobs", token=token).status_code == 201
    pair = f"{credential.key_id}:{secret}"
    assert zaqar(live.url, "GET", "/v2/queues/jobs", token=pair).status_code == 200
    assert zaqar(live.url, "GET", "/v2/queues", token=f"{credential.key_id}:x").status_code == 401
    assert live.engine.find_queue("alpha", "jobs") is not None
    wrong = httpx.post(
        live.url + "/v2/auth/tokens", json={"key_id": credential.key_id, "secret": "x"}
    )
    assert wrong.status_code == 401
    live.authority.revoke(credential.key_id)
    assert zaqar(live.url, "GET", "/v2/queues", token=token).status_code == 401


def test_project_header_must_agree_and_role_must_allow(live: Live) -> None:
    admin, admin_secret = live.issue("alpha", "admin")
    reader, reader_secret = live.issue("alpha", "reader")
    a, r = f"{admin.key_id}:{admin_secret}", f"{reader.key_id}:{reader_secret}"
    assert zaqar(live.url, "PUT", "/v2/queues/jobs", token=a, project="alpha").status_code == 201
    assert zaqar(live.url, "PUT", "/v2/queues/jobs", token=a, project="beta").status_code == 403
    post = {"messages": [{"body": 1}]}
    assert (
        zaqar(live.url, "POST", "/v2/queues/jobs/messages", token=r, json=post).status_code == 403
    )
    assert zaqar(live.url, "GET", "/v2/queues/jobs/stats", token=r).status_code == 200
    assert zaqar(live.url, "GET", "/v2/health", token=a).status_code == 403


def test_python_zaqarclient_with_a_token(live: Live) -> None:
    credential, secret = live.issue("alpha", "admin")
    token = _token(live, credential.key_id, secret)
    options = {"os_auth_token": token, "os_project_id": "alpha"}
    cli = zaqar_client.Client(
        live.url, version=2, conf={"auth_opts": {"backend": "keystone", "options": options}}
    )
    q = cli.queue("jobs", force_create=True)
    q.post([{"body": {"n": 1}}])
    assert [m.body for m in q.messages(echo=True)] == [{"n": 1}]


def test_signed_url_allows_exactly_what_it_names(live: Live) -> None:
    credential, secret = live.issue("alpha", "admin")
    pair = f"{credential.key_id}:{secret}"
    zaqar(live.url, "PUT", "/v2/queues/jobs", token=pair)
    zaqar(live.url, "PUT", "/v2/queues/other", token=pair)
    expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    share = {"paths": ["messages"], "methods": ["GET", "POST"], "expires": expires}
    answer = zaqar(live.url, "POST", "/v2/queues/jobs/share", token=pair, json=share)
    assert answer.status_code == 200, answer.text
    signed = answer.json()
    options = {**{k: signed[k] for k in ("paths", "methods", "expires", "signature")},
               "os_project_id": "alpha"}  # fmt: skip
    cli = zaqar_client.Client(
        live.url, version=2, conf={"auth_opts": {"backend": "signed-url", "options": options}}
    )
    q = cli.queue("jobs", auto_create=False)
    q.post([{"body": "shared"}])
    assert [m.body for m in q.messages(echo=True)] == ["shared"]
    headers = {
        "URL-Signature": signed["signature"],
        "URL-Expires": signed["expires"],
        "URL-Methods": "GET,POST",
        "URL-Paths": signed["paths"][0],
    }
    # Another method, another queue, a forged signature: Zaqar's 404.
    for method, path, extra in [
        ("DELETE", "/v2/queues/jobs/messages?ids=x", {}),
        ("GET", "/v2/queues/other/messages", {}),
        ("GET", "/v2/queues/jobs/messages", {"URL-Signature": "0" * 64}),
        ("GET", "/v2/queues/jobs/messages", {"URL-Methods": "GET,POST,DELETE"}),
    ]:
        got = zaqar(live.url, method, path, project="alpha", headers={**headers, **extra})
        assert got.status_code == 404, (method, path, extra)
    reader, reader_secret = live.issue("alpha", "reader")
    refused = zaqar(
        live.url, "POST", "/v2/queues/jobs/share", token=f"{reader.key_id}:{reader_secret}", json={}
    )
    assert refused.status_code == 403


def test_metrics_need_an_admin_or_operator_and_openapi_is_public(live: Live) -> None:
    admin, admin_secret = live.issue("alpha", "admin")
    producer, producer_secret = live.issue("alpha", "producer")
    assert httpx.get(live.url + "/metrics").status_code == 401
    bearer = {"Authorization": f"Bearer {producer.key_id}:{producer_secret}"}
    assert httpx.get(live.url + "/metrics", headers=bearer).status_code == 403
    bearer = {"Authorization": f"Bearer {admin.key_id}:{admin_secret}"}
    assert httpx.get(live.url + "/metrics", headers=bearer).status_code == 200
    assert httpx.get(live.url + "/openapi.json").status_code == 200


def test_admin_api_manages_its_own_project_only(live: Live) -> None:
    admin, secret = live.issue("alpha", "admin")
    other, _ = live.issue("beta", "reader")
    a = f"{admin.key_id}:{secret}"
    made = zaqar(live.url, "POST", "/v2/credentials", token=a, json={"role": "producer"})
    assert made.status_code == 201 and made.json()["project"] == "alpha" and made.json()["secret"]
    for body in ({"role": "operator"}, {"role": "reader", "project": "beta"}):
        assert zaqar(live.url, "POST", "/v2/credentials", token=a, json=body).status_code == 403
    listed = zaqar(live.url, "GET", "/v2/credentials", token=a).json()["credentials"]
    assert {c["project"] for c in listed} == {"alpha"} and all("secret" not in c for c in listed)
    assert zaqar(live.url, "DELETE", f"/v2/credentials/{other.key_id}", token=a).status_code == 404
    rotated = zaqar(live.url, "POST", f"/v2/credentials/{made.json()['key_id']}/rotate", token=a)
    assert rotated.status_code == 201 and rotated.json()["key_id"] != made.json()["key_id"]
    old = live.authority.get(made.json()["key_id"])
    assert old is not None and old.revoked
    gone = zaqar(live.url, "DELETE", f"/v2/credentials/{rotated.json()['key_id']}", token=a)
    assert gone.status_code == 200 and gone.json()["revoked"] is True


def test_a_subscriber_confirms_with_the_signed_url_it_is_sent(store: Store) -> None:
    # Given a server with credentials that requires subscriptions to be confirmed
    with live_server(store) as live, receiving() as hook:
        live.engine.subscriptions.require_confirmation = True
        live.engine.subscriptions.signer = live.authority.sign
        sender = allow_local(live.engine)
        deliveries = Deliveries(live.engine, sender, DeliverySettings(timeout=WAIT, tick=0.01))
        deliveries.start()
        try:
            credential, secret = live.issue("alpha", "admin")
            pair = f"{credential.key_id}:{secret}"
            sub = zaqar(live.url, "POST", "/v2/queues/jobs/subscriptions", token=pair,
                        json={"subscriber": hook.url, "ttl": 600})  # fmt: skip
            assert sub.status_code == 201, sub.text
            sid = sub.json()["subscription_id"]
            # the subscriber is sent Zaqar's confirmation request, signed
            assert hook.wait_for(1)
            request = hook.bodies[0]
            assert request["Message_Type"] == "SubscriptionConfirmation"
            signed = {k: request[k] for k in ("URL-Signature", "URL-Expires", "URL-Methods",
                                              "URL-Paths", "X-Project-ID")}  # fmt: skip
            confirm = request["SubscribeURL"][0]
            # a forged signature or another subscription's path is Zaqar's 404
            forged = {**signed, "URL-Signature": "0" * 64}
            assert zaqar(live.url, "PUT", confirm, headers=forged,
                         json={"confirmed": True}).status_code == 404  # fmt: skip
            other = confirm.replace(sid, "another")
            assert zaqar(live.url, "PUT", other, headers=signed,
                         json={"confirmed": True}).status_code == 404  # fmt: skip
            # the subscriber confirms with the headers alone, no credential of its own
            answer = zaqar(live.url, "PUT", confirm, headers=signed, json=request["SubscribeBody"])
            assert answer.status_code == 204, answer.text
            got = zaqar(live.url, "GET", f"/v2/queues/jobs/subscriptions/{sid}", token=pair)
            assert got.json()["confirmed"] is True
            # and is notified of what is posted from then on
            zaqar(live.url, "POST", "/v2/queues/jobs/messages", token=pair,
                  json={"messages": [{"body": {"n": 1}}]})  # fmt: skip
            assert hook.wait_for(2)
            assert hook.bodies[1]["Message_Type"] == "Notification"
            assert hook.bodies[1]["body"] == {"n": 1}
        finally:
            deliveries.stop()


@pytest.mark.parametrize("role", [r.value for r in Role if r is not Role.OPERATOR])
def test_a_post_creates_a_missing_queue_only_for_a_role_that_creates_queues(
    live: Live, role: str
) -> None:
    # Given a credential of `role` that may send messages (or not),
    credential, secret = live.issue("alpha", role)
    token = f"{credential.key_id}:{secret}"
    post = {"messages": [{"body": 1}]}
    # when it posts to a queue that does not exist,
    answer = zaqar(live.url, "POST", "/v2/queues/fresh/messages", token=token, json=post)
    created = live.engine.find_queue("alpha", "fresh") is not None
    # the queue comes into being only if the role may both send and create queues.
    may_create = allowed(Role(role), Action.QUEUE_CREATE)
    may_send = allowed(Role(role), Action.MESSAGE_SEND)
    assert created == (may_create and may_send)
    if created:
        assert answer.status_code == 201
    elif may_send:
        assert answer.status_code == 404
        assert "may not create queues" in answer.json()["description"]
    else:
        assert answer.status_code == 403


def test_a_claim_acknowledges_only_for_who_may_acknowledge(live: Live) -> None:
    """Acknowledging deletes: a signed URL for claims claims but does not acknowledge, and
    every role acknowledges with a claim exactly when it may both claim and acknowledge."""
    admin, admin_secret = live.issue("alpha", "admin")
    pair = f"{admin.key_id}:{admin_secret}"
    zaqar(live.url, "PUT", "/v2/queues/jobs", token=pair)
    post = {"messages": [{"body": n} for n in range(4)]}
    assert (
        zaqar(live.url, "POST", "/v2/queues/jobs/messages", token=pair, json=post).status_code
        == 201
    )
    first = zaqar(live.url, "POST", "/v2/queues/jobs/claims?limit=1", token=pair, json={})
    assert first.status_code == 201
    claim_id = first.headers["Location"].rsplit("/", 1)[1]
    held = [m["href"].split("?")[0].rsplit("/", 1)[1] for m in first.json()["messages"]]
    acknowledging = {"acknowledge": {"claim_id": claim_id, "ids": held}}

    def total() -> int:
        stats = zaqar(live.url, "GET", "/v2/queues/jobs/stats", token=pair).json()
        return int(stats["messages"]["total"])

    expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    share = {"paths": ["claims"], "methods": ["POST"], "expires": expires}
    signed = zaqar(live.url, "POST", "/v2/queues/jobs/share", token=pair, json=share).json()
    headers = {
        "URL-Signature": signed["signature"],
        "URL-Expires": signed["expires"],
        "URL-Methods": "POST",
        "URL-Paths": signed["paths"][0],
    }
    path = "/v2/queues/jobs/claims?limit=1"
    refused = zaqar(live.url, "POST", path, project="alpha", headers=headers, json=acknowledging)
    assert refused.status_code == 403, refused.text
    assert total() == 4
    claimed = zaqar(live.url, "POST", path, project="alpha", headers=headers, json={})
    assert claimed.status_code == 201  # the URL still claims

    for role in Role:
        if role is Role.OPERATOR:
            continue  # server-wide; the admin row covers a project's every right
        credential, secret = live.issue("alpha", role.value)
        token = f"{credential.key_id}:{secret}"
        before = total()
        got = zaqar(live.url, "POST", path, token=token, json=acknowledging)
        may = allowed(role, Action.MESSAGE_CLAIM) and allowed(role, Action.MESSAGE_ACK)
        if may:
            assert got.status_code in (200, 201), (role, got.text)
        else:
            assert got.status_code == 403, (role, got.text)
            assert total() == before
