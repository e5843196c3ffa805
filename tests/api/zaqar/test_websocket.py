"""Zaqar's WebSocket transport, driven by python-zaqarclient's own `ws://` transport against the
real server over a socket: the calls its HTTP client makes, the same roles, Zaqar's frames."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import websocket
from zaqarclient.transport import errors as zerrors
from zaqarclient.transport import get_transport_for
from zaqarclient.transport import request as zrequest

from deadletter.api.app import build_app
from deadletter.api.zaqar.reads import FREE
from deadletter.api.zaqar.routes import ROUTES
from deadletter.api.zaqar.websocket_frames import ACTIONS, request_of
from deadletter.auth.roles import Role, allowed
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from tests.auth.live import Live, live_server
from tests.support.routes import zaqar_action
from tests.support.servers import serving

PROJECT = "p"
CLIENT = "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"


class Ws:
    """python-zaqarclient's websocket transport, one call per action as its docs show."""

    def __init__(self, url: str, token: str = "none", project: str | None = PROJECT) -> None:
        self.url = url.replace("http://", "ws://", 1)
        options = {"os_auth_token": token, "os_project_id": project}
        self.transport = get_transport_for(
            self.url, options={"auth_opts": {"backend": "noauth", "options": options}}
        )

    def __call__(self, action: str, **body: Any) -> Any:
        content = json.dumps(body) if body else None
        answer = self.transport.send(zrequest.Request(self.url, action, content=content))
        return answer.deserialized_content

    def status(self, action: str, **body: Any) -> int:
        content = json.dumps(body) if body else None
        try:
            answer = self.transport.send(zrequest.Request(self.url, action, content=content))
        except zerrors.TransportError as exc:
            return int(exc.code)
        return int(answer.status_code)

    def pushed(self, timeout: float = 10.0) -> Any:
        """The next frame the server sends of its own accord."""
        self.transport._ws.settimeout(timeout)
        return self.transport.recv()

    def close(self) -> None:
        self.transport.cleanup()


@pytest.fixture
def engine(store: Store) -> Engine:
    # Real time: claims are given back, never waited out.
    return Engine(store)


@pytest.fixture
def url(engine: Engine) -> Iterator[str]:
    with serving(build_app(engine)) as base:
        yield base


@pytest.fixture
def ws(url: str) -> Iterator[Ws]:
    client = Ws(url)
    yield client
    client.close()


def test_the_real_clients_websocket_runs_the_http_clients_calls(ws: Ws, engine: Engine) -> None:
    # The calls of test_zaqarclient.py's basic flow, over the socket.
    assert ws.status("ping") == 204
    assert ws.status("queue_create", queue_name="jobs", metadata={"owner": "me"}) == 201
    assert ws("queue_get", queue_name="jobs")["owner"] == "me"
    posted = ws("message_post", queue_name="jobs", messages=[{"body": {"n": 1}, "ttl": 300},
                                                             {"body": {"n": 2}}])  # fmt: skip
    assert len(posted["message_ids"]) == 2
    assert ws("queue_get_stats", queue_name="jobs")["messages"]["free"] == 2
    claim = ws("claim_create", queue_name="jobs", ttl=120, grace=60, limit=10)
    messages = claim["messages"]
    assert sorted(m["body"]["n"] for m in messages) == [1, 2]
    assert all(m["claim_id"] == claim["claim_id"] for m in messages)
    # Zaqar's message fields, not this server's extended ones (python-zaqarclient needs them).
    assert {"id", "ttl", "age", "body"} <= set(messages[0]) and "history" not in messages[0]
    first, second = messages
    assert ws("claim_get", queue_name="jobs", claim_id=claim["claim_id"])["ttl"] == 120
    ws("message_delete", queue_name="jobs", message_id=first["id"], claim_id=claim["claim_id"])
    assert ws.status("claim_update", queue_name="jobs", claim_id=claim["claim_id"], ttl=180) == 204
    assert ws("claim_get", queue_name="jobs", claim_id=claim["claim_id"])["ttl"] == 180
    assert ws.status("claim_delete", queue_name="jobs", claim_id=claim["claim_id"]) == 204
    left = ws("message_list", queue_name="jobs", echo=True)["messages"]
    assert [m["body"] for m in left] == [second["body"]]
    got = ws("message_get", queue_name="jobs", message_id=second["id"])["messages"]
    assert got["body"] == second["body"] and got["id"] == second["id"]
    many = ws("message_get_many", queue_name="jobs", message_ids=[second["id"]])["messages"]
    assert [m["id"] for m in many] == [second["id"]]
    assert ws.status("message_delete_many", queue_name="jobs", message_ids=[second["id"]]) == 204
    assert ws("queue_get_stats", queue_name="jobs")["messages"]["total"] == 0
    assert "jobs" in [q["name"] for q in ws("queue_list")["queues"]]
    # What the socket did is what the engine holds.
    assert engine.stats(PROJECT, "jobs").total == 0
    assert ws.status("queue_delete", queue_name="jobs") == 204
    assert engine.find_queue(PROJECT, "jobs") is None
    assert ws.status("queue_get", queue_name="jobs") == 404


def test_pop_and_a_webhook_subscription_over_the_socket(ws: Ws) -> None:
    ws("message_post", queue_name="q", messages=[{"body": "a"}, {"body": "b"}])
    popped = ws("message_delete_many", queue_name="q", pop=1)["messages"]
    assert [m["body"] for m in popped] == ["a"]
    hook = "http://hooks.example/a"
    made = ws("subscription_create", queue_name="q", subscriber=hook, ttl=600)
    sid = made["subscription_id"]
    assert ws("subscription_get", queue_name="q", subscription_id=sid)["subscriber"] == hook
    listed = ws("subscription_list", queue_name="q")["subscriptions"]
    assert [s["id"] for s in listed] == [sid]
    assert ws.status("subscription_delete", queue_name="q", subscription_id=sid) == 204
    assert ws("subscription_list", queue_name="q")["subscriptions"] == []


def test_a_socket_subscribed_to_a_queue_is_pushed_each_new_message(url: str, ws: Ws) -> None:
    # Given a message sent before the subscription,
    ws("message_post", queue_name="events", messages=[{"body": "before"}])
    # when the socket subscribes itself (no subscriber) and another client sends two,
    made = ws("subscription_create", queue_name="events", ttl=3600)
    sid = made["subscription_id"]
    listed = ws("subscription_list", queue_name="events")["subscriptions"]
    assert [(s["id"], s["subscriber"]) for s in listed] == [(sid, "websocket")]
    other = Ws(url)
    try:
        other("message_post", queue_name="events", messages=[{"body": {"n": 1}, "ttl": 300}])
        other("message_post", queue_name="events", messages=[{"body": {"n": 2}}])
    finally:
        other.close()
    # each new one is pushed, as a webhook receives it, and the older one is not.
    pushed = [ws.pushed(), ws.pushed()]
    assert pushed[0] == {
        "body": {"n": 1}, "ttl": 300, "queue_name": "events", "Message_Type": "Notification"
    }  # fmt: skip
    assert pushed[1]["body"] == {"n": 2}
    # Once unsubscribed, nothing more comes.
    assert ws.status("subscription_delete", queue_name="events", subscription_id=sid) == 204
    ws("message_post", queue_name="events", messages=[{"body": "after"}])
    with pytest.raises(websocket.WebSocketTimeoutException):
        ws.pushed(timeout=0.5)


@pytest.mark.parametrize("action", list(ACTIONS))
def test_each_action_is_a_zaqar_route_and_reads_only_what_it_reads(action: str) -> None:
    # The action table adds no rule of its own: each action names a route of the route
    # table, and sends it only query parameters and body fields that route declares.
    act = ACTIONS[action]
    template = act.path.replace("{queue_name}", "{queue}")
    (reads,) = [r.reads for r in ROUTES if (r.path, r.method) == (template, act.method)]
    assert set(act.query.values()) <= set(reads.query)
    sent = set(act.body) | ({act.whole} if act.whole else set())
    assert not sent or reads.body is FREE or sent <= set(reads.body or ())
    assert not act.whole or reads.body is FREE


def _frame(url: str, frame: Any) -> Any:
    """One raw frame sent and its answer, without python-zaqarclient."""
    conn = websocket.create_connection(url.replace("http://", "ws://", 1) + "/v2/ws", timeout=10)
    try:
        conn.send(frame if isinstance(frame, str) else json.dumps(frame))
        return json.loads(conn.recv())
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("frame", "status", "words"),
    [
        ({"action": "queue_nuke", "body": {}}, 400, 'Unknown action "queue_nuke"'),
        ({"action": "queue_creat", "body": {}}, 400, 'did you mean "queue_create"'),
        ({"action": "queue_get", "body": {"queue_nmae": "q"}}, 400, 'did you mean "queue_name"'),
        ({"action": "queue_get", "body": {}}, 400, "queue_name is required"),
        # A name holding a '/' would reach another route: it is refused.
        ({"action": "queue_get", "body": {"queue_name": "q/messages"}}, 400, "may not contain"),
        (
            {
                "action": "queue_get",
                "headers": {"Client-ID": CLIENT},
                "body": {"queue_name": "a b"},
            },
            400,
            "is not a",
        ),
        # The HTTP route's own rules: a Zaqar request names its client.
        ({"action": "queue_get", "body": {"queue_name": "q"}}, 400, "Client-ID header is required"),
        ({"action": "queue_list", "body": {}, "extra": 1}, 400, "Unknown frame key"),
        ("{not json", 400, "Can't decode the frame"),
    ],
)
def test_a_frame_it_cannot_answer_gets_an_error_frame(
    url: str, frame: Any, status: int, words: str
) -> None:
    answered = _frame(url, frame)
    assert answered["headers"]["status"] == status
    assert words in answered["body"]["error"]
    assert answered["body"]["error"] == answered["body"]["description"]


def test_an_answer_frame_echoes_the_request_as_zaqar_does(url: str) -> None:
    headers = {"Client-ID": CLIENT, "X-Project-ID": PROJECT}
    frame = {"action": "queue_list", "headers": headers, "body": {"limit": 5}}
    answered = _frame(url, frame)
    assert answered == {
        "request": {**frame, "api": "v2"},
        "headers": {"status": 200},
        "body": answered["body"],
    }
    assert answered["body"]["queues"] == []


@pytest.mark.parametrize("path", ["", "/", "/v2/ws", "/v2"])
def test_the_transport_is_served_at_any_path_as_zaqar_serves_it(url: str, path: str) -> None:
    # python-zaqarclient connects to the URL it is given; the HTTP routes stay HTTP's.
    conn = websocket.create_connection(url.replace("http://", "ws://", 1) + path, timeout=10)
    try:
        conn.send(json.dumps({"action": "ping", "headers": {}, "body": {}}))
        assert json.loads(conn.recv())["headers"]["status"] == 204
    finally:
        conn.close()


# Authentication and roles: the HTTP face's, because each frame is its route's request.


@pytest.fixture
def live(store: Store) -> Iterator[Live]:
    with live_server(store) as server:
        yield server


def _client(live: Live, role: str, project: str = "alpha") -> Ws:
    credential, secret = live.issue(project, role)
    return Ws(live.url, token=f"{credential.key_id}:{secret}", project=project)


def test_authenticate_carries_the_token_of_every_later_frame(live: Live) -> None:
    admin = _client(live, "admin")
    try:
        assert admin.status("queue_create", queue_name="jobs") == 201
    finally:
        admin.close()
    assert live.engine.find_queue("alpha", "jobs") is not None
    # A token that does not verify is refused at `authenticate`, and so is every frame after.
    stranger = Ws(live.url, token="dlt1.abc.def", project="alpha")
    try:
        with pytest.raises(zerrors.UnauthorizedError):
            stranger("queue_list")
    finally:
        stranger.close()
    headers = {"Client-ID": CLIENT}
    unauthenticated = _frame(live.url, {"action": "queue_list", "headers": headers, "body": {}})
    assert unauthenticated["headers"]["status"] == 401


def test_a_readers_socket_cannot_post_but_can_read(live: Live) -> None:
    live.engine.create_queue("alpha", "jobs")
    reader = _client(live, "reader")
    try:
        with pytest.raises(zerrors.ForbiddenError):
            reader("message_post", queue_name="jobs", messages=[{"body": 1}])
        assert reader("queue_get_stats", queue_name="jobs")["messages"]["total"] == 0
    finally:
        reader.close()
    assert live.engine.stats("alpha", "jobs").total == 0


def _sample(name: str) -> Any:
    return {
        "subscriber": "http://hooks.example/a",
        "queue_name": "jobs",
        "message_id": "0190a0b4-0000-7000-8000-000000000000",
        "claim_id": "0190a0b4-0000-7000-8000-000000000001",
        "subscription_id": "0190a0b4-0000-7000-8000-000000000002",
    }[name]


@pytest.mark.parametrize("role", [r.value for r in Role if r is not Role.OPERATOR])
def test_every_action_allows_a_role_what_its_http_route_allows(live: Live, role: str) -> None:
    # Given a queue, and a socket authenticated with this role,
    live.engine.create_queue("alpha", "jobs")
    client = _client(live, role)
    try:
        for action, route in ACTIONS.items():
            named = [*route.in_path, *(["subscriber"] if "subscriber" in route.body else [])]
            body = {name: _sample(name) for name in named}
            # when it asks each action, it is refused exactly when the role table refuses
            # the action's HTTP route.
            call = request_of(route, body)
            template = route.path.replace("{queue_name}", "{queue}")
            wanted = zaqar_action(call.method, template, call.query)
            may = wanted is None or allowed(Role(role), wanted)
            status = client.status(action, **body)
            assert (status == 403) is (not may), (action, status)
    finally:
        client.close()


def test_pushes_stop_when_the_token_is_revoked(live: Live) -> None:
    credential, secret = live.issue("alpha", "reader")
    listener = Ws(live.url, token=f"{credential.key_id}:{secret}", project="alpha")
    producer = _client(live, "producer")
    try:
        live.engine.create_queue("alpha", "events")
        assert listener.status("subscription_create", queue_name="events") == 201
        producer("message_post", queue_name="events", messages=[{"body": 1}])
        assert listener.pushed()["body"] == 1
        live.authority.revoke(credential.key_id)
        # A listing let in just before the revocation may still bring the next message,
        producer("message_post", queue_name="events", messages=[{"body": 2}])
        with contextlib.suppress(websocket.WebSocketTimeoutException):
            assert listener.pushed(timeout=1.0)["body"] == 2
        # but the next look is refused, and ends the pushes.
        producer("message_post", queue_name="events", messages=[{"body": 3}])
        with pytest.raises(websocket.WebSocketTimeoutException):
            listener.pushed(timeout=1.0)
    finally:
        listener.close()
        producer.close()


def test_the_subscription_ends_with_its_ttl(ws: Ws) -> None:
    made = ws("subscription_create", queue_name="brief", ttl=1)
    deadline = time.monotonic() + 10
    while ws("subscription_list", queue_name="brief")["subscriptions"]:
        assert time.monotonic() < deadline, made
        time.sleep(0.05)
