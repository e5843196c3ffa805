"""The limit table is the one truth: docs/limits.md shows it as it is, and for every bound in
it a request at the bound is served while one past it is refused in the face's own words,
against the server as `deadletter serve` runs it. A bound added to the table without a probe
here fails `test_every_limit_has_a_probe`."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import websocket
from botocore.config import Config
from botocore.exceptions import ClientError

from deadletter.domain.limits import BY_KEY, LIMITS, limit, markdown_table
from tests.api.serve_process import DEADLETTER, start, stop

DOCS = Path(__file__).resolve().parents[2] / "docs" / "limits.md"
CLIENT = "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"
MAX_QUEUES = 12  # the server's --max-queues, so the quota's probe stays quick


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("limits")
    flags = ["--max-queues", str(MAX_QUEUES), "--webhook-allow", "127.0.0.0/8"]
    proc, url = start(f"sqlite:///{data / 'd.db'}", data, *flags)
    try:
        yield url
    finally:
        stop(proc)


def _zaqar(server: str) -> httpx.Client:
    project = f"t{uuid.uuid4().hex[:12]}"
    headers = {"Client-ID": CLIENT, "X-Project-ID": project}
    return httpx.Client(base_url=server, headers=headers, timeout=60)


def _raw_status(server: str, raw: bytes) -> int:
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(raw)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while b"\r\n" not in answer and (chunk := s.recv(4096)):
                answer += chunk
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def _head(target: str, fields: int = 0, pad: int = 0) -> bytes:
    lines = [f"GET {target} HTTP/1.1", "Host: t", "Connection: close"]
    lines += [f"X-F{i}: v" for i in range(fields)]
    if pad:
        lines.append("X-Pad: " + "a" * pad)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# Each probe sends a request at its bound and one past it: (status at it, status past it).
Probe = Callable[[str, int], tuple[int, int]]


def request_line(server: str, bound: int) -> tuple[int, int]:
    def target(n: int) -> str:
        return "/v2/ping?pad=" + "a" * (n - len("/v2/ping?pad="))

    return _raw_status(server, _head(target(bound))), _raw_status(server, _head(target(bound + 1)))


def header_count(server: str, bound: int) -> tuple[int, int]:
    at = _head("/v2/ping", fields=bound - 2)  # Host and Connection are two
    return _raw_status(server, at), _raw_status(server, _head("/v2/ping", fields=bound - 1))


def head_bytes(server: str, bound: int) -> tuple[int, int]:
    base = len(_head("/v2/ping", pad=1)) - 1
    at, past = _head("/v2/ping", pad=bound - base), _head("/v2/ping", pad=bound - base + 1)
    return _raw_status(server, at), _raw_status(server, past)


def body_bytes(server: str, bound: int) -> tuple[int, int]:
    with _zaqar(server) as c:
        c.put("/v2/queues/q", json={})

        # A JSON body of exactly `bound` bytes: too large for a message post, not for the server.
        def body(n: int) -> bytes:
            return b'{"messages": [{"body": "' + b"a" * (n - 28) + b'"}]}'

        headers = {"Content-Type": "application/json"}
        at = c.post("/v2/queues/q/messages", content=body(bound), headers=headers)
        past = c.post("/v2/queues/q/messages", content=body(bound + 1), headers=headers)
        # At the bound the server reads the body and the queue's own size refuses it (400).
        return at.status_code, past.status_code


def messages_per_request(server: str, bound: int) -> tuple[int, int]:
    statuses: list[tuple[int, int]] = []
    with _zaqar(server) as c:
        c.put("/v2/queues/q", json={})

        def post(n: int) -> httpx.Response:
            return c.post(
                "/v2/queues/q/messages", json={"messages": [{"body": i} for i in range(n)]}
            )

        at, past = post(bound), post(bound + 1)
        assert len(past.headers.get("location", "")) == 0
        statuses.append((at.status_code, past.status_code))
        ids = [r.rsplit("/", 1)[1] for r in at.json()["resources"]]
        one_more = ",".join([*ids, "0" * 24])
        get_at = c.get("/v2/queues/q/messages", params={"ids": ",".join(ids)})
        get_past = c.get("/v2/queues/q/messages", params={"ids": one_more})
        statuses.append((get_at.status_code, get_past.status_code))
        delete_past = c.delete("/v2/queues/q/messages", params={"ids": one_more})
        delete_at = c.delete("/v2/queues/q/messages", params={"ids": ",".join(ids)})
        statuses.append((delete_at.status_code, delete_past.status_code))
        post(bound)
        pop_past = c.delete("/v2/queues/q/messages", params={"pop": bound + 1})
        pop_at = c.delete("/v2/queues/q/messages", params={"pop": bound})
        statuses.append((pop_at.status_code, pop_past.status_code))
        post(bound)
        claim_past = c.post("/v2/queues/q/claims", params={"limit": bound + 1}, json={"ttl": 60})
        claim_at = c.post("/v2/queues/q/claims", params={"limit": bound}, json={"ttl": 60})
        statuses.append((claim_at.status_code, claim_past.status_code))
    assert statuses == [(201, 400), (200, 400), (204, 400), (200, 400), (201, 400)], statuses
    return 200, 400


def queues_per_tenant(server: str, bound: int) -> tuple[int, int]:
    """Spread over the home region and invented ones: one quota for them all."""
    account = f"{uuid.uuid4().int % 10**12:012d}"
    regions = ["us-east-1", "eu-west-1", "xx-yyy-1", "xx-yyy-2", "zz-qqq-9"]

    def sqs(region: str) -> Any:
        return boto3.client(
            "sqs", endpoint_url=server, region_name=region, aws_access_key_id=account,
            aws_secret_access_key="x", config=Config(retries={"max_attempts": 1}),
        )  # fmt: skip

    for i in range(MAX_QUEUES):
        sqs(regions[i % len(regions)]).create_queue(QueueName=f"q{i}")
    with pytest.raises(ClientError) as refused:
        sqs("ap-south-9").create_queue(QueueName="one-more")
    with httpx.Client(base_url=server, headers={"Client-ID": CLIENT}) as c:
        zaqar = c.put("/v2/queues/one-more", json={}, headers={"X-Project-ID": account})
    assert refused.value.response["Error"]["Code"] == "OverLimit"
    return 201, zaqar.status_code


def templates_per_project(server: str, bound: int) -> tuple[int, int]:
    with _zaqar(server) as c:
        made = [c.put(f"/v2/templates/t{i}", json={"pattern": f"t{i}-*"}) for i in range(bound)]
        assert {r.status_code for r in made} == {201}
        return made[-1].status_code, c.put("/v2/templates/x", json={"pattern": "x*"}).status_code


def template_page(server: str, bound: int) -> tuple[int, int]:
    with _zaqar(server) as c:
        for i in range(3):
            c.put(f"/v2/templates/t{i}", json={"pattern": f"t{i}-*"})
        first = c.get("/v2/templates", params={"limit": 2}).json()
        assert [t["name"] for t in first["templates"]] == ["t0", "t1"]
        rest = c.get(first["links"][0]["href"]).json()
        assert [t["name"] for t in rest["templates"]] == ["t2"]
        at = c.get("/v2/templates", params={"limit": bound})
        return at.status_code, c.get("/v2/templates", params={"limit": bound + 1}).status_code


def _subscribe(c: httpx.Client, queue: str, i: int) -> int:
    doc = {"subscriber": f"http://127.0.0.1:9/{queue}/{i}", "ttl": 3600}
    return c.post(f"/v2/queues/{queue}/subscriptions", json=doc).status_code


def subscriptions_per_queue(server: str, bound: int) -> tuple[int, int]:
    with _zaqar(server) as c:
        c.put("/v2/queues/q", json={})
        made = [_subscribe(c, "q", i) for i in range(bound)]
        assert set(made) == {201}
        return made[-1], _subscribe(c, "q", bound)


def subscriptions_per_project(server: str, bound: int) -> tuple[int, int]:
    per_queue = limit("subscriptions_per_queue")
    with _zaqar(server) as c:
        made = []
        for n in range(bound // per_queue):
            c.put(f"/v2/queues/q{n}", json={})
            made += [_subscribe(c, f"q{n}", i) for i in range(per_queue)]
        assert set(made) == {201}
        c.put("/v2/queues/last", json={})
        return made[-1], _subscribe(c, "last", 0)


def tags_per_queue(server: str, bound: int) -> tuple[int, int]:
    with _zaqar(server) as c:
        c.put("/v2/queues/q", json={})
        made = [c.put(f"/v2/queues/q/tags/t{i}", json={}).status_code for i in range(bound)]
        assert set(made) == {201}, made
        return made[-1], c.put("/v2/queues/q/tags/one-more", json={}).status_code


def live_feeds_per_project(server: str, bound: int) -> tuple[int, int]:
    project = f"t{uuid.uuid4().hex[:12]}"
    with contextlib.ExitStack() as feeds, httpx.Client(base_url=server, timeout=30) as c:

        def feed() -> int:
            headers = {"X-Project-ID": project}
            return feeds.enter_context(
                c.stream("GET", "/console/events", headers=headers)
            ).status_code

        statuses = [feed() for _ in range(bound)]
        assert set(statuses) == {200}, statuses
        return statuses[-1], feed()


def credentials_per_project(server: str, bound: int) -> tuple[int, int]:
    """On a server of its own, with authentication required."""
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{tmp}/d.db"
        env = {**os.environ, "DEADLETTER_DATA_DIR": tmp}
        made = subprocess.run(
            [DEADLETTER, "credentials", "create-operator", "--db", db, "--json"],
            capture_output=True, text=True, env=env, timeout=60, check=True,
        )  # fmt: skip
        operator = json.loads(made.stdout)
        proc, url = start(db, Path(tmp), "--auth", "required")
        try:
            token = {"X-Auth-Token": f"{operator['key_id']}:{operator['secret']}"}
            with httpx.Client(base_url=url, headers={"Client-ID": CLIENT, **token}) as c:

                def issue() -> int:
                    doc = {"project": "tenant-c", "role": "producer"}
                    return c.post("/v2/credentials", json=doc).status_code

                statuses = [issue() for _ in range(bound)]
                assert set(statuses) == {201}, statuses
                return statuses[-1], issue()
        finally:
            stop(proc)


def subscriptions_per_socket(server: str, bound: int) -> tuple[int, int]:
    project = f"t{uuid.uuid4().hex[:12]}"
    conn = websocket.create_connection(server.replace("http://", "ws://", 1), timeout=30)
    try:

        def subscribe(n: int) -> int:
            headers = {"Client-ID": CLIENT, "X-Project-ID": project}
            frame = {
                "action": "subscription_create",
                "headers": headers,
                "body": {"queue_name": f"q{n}"},
            }
            conn.send(json.dumps(frame))
            return int(json.loads(conn.recv())["headers"]["status"])

        statuses = [subscribe(n) for n in range(bound)]
        assert set(statuses) == {201}, statuses
        return statuses[-1], subscribe(bound)
    finally:
        conn.close()


def _filter_probe(make: Callable[[int], list[tuple[str, str]]]) -> Probe:
    """A count of a DLQ's dead letters with the filter `make(n)` builds, at n and one past."""

    def probe(server: str, bound: int) -> tuple[int, int]:
        with _zaqar(server) as c:
            assert c.put("/v2/queues/dlq", json={}).status_code == 201
            statuses = [
                c.get("/v2/queues/dlq/dead_letters/count", params=make(n)).status_code
                for n in (bound, bound + 1)
            ]
        return statuses[0], statuses[1]

    return probe


PROBES: dict[str, tuple[Probe, tuple[int, int]]] = {
    # At the bound the head is read whole and the app answers (its refusal of the unknown `pad`).
    "request_line": (request_line, (400, 414)),
    "header_count": (header_count, (204, 431)),
    "head_bytes": (head_bytes, (204, 431)),
    "body_bytes": (body_bytes, (400, 413)),
    "messages_per_request": (messages_per_request, (200, 400)),
    "queues_per_tenant": (queues_per_tenant, (201, 403)),
    "templates_per_project": (templates_per_project, (201, 403)),
    "template_page": (template_page, (200, 400)),
    "tags_per_queue": (tags_per_queue, (201, 400)),
    "credentials_per_project": (credentials_per_project, (201, 403)),
    "live_feeds_per_project": (live_feeds_per_project, (200, 503)),
    "subscriptions_per_queue": (subscriptions_per_queue, (201, 403)),
    "subscriptions_per_project": (subscriptions_per_project, (201, 403)),
    "subscriptions_per_socket": (subscriptions_per_socket, (201, 400)),
    "filter_text": (_filter_probe(lambda n: [("error_contains", "x" * n)]), (200, 400)),
    "filter_pattern": (_filter_probe(lambda n: [("error_matches", "a" * n)]), (200, 400)),
    "filter_attributes": (
        _filter_probe(lambda n: [("attribute", f"a{i}=v") for i in range(n)]),
        (200, 400),
    ),
}


def test_docs_show_the_table_as_it_is() -> None:
    text = DOCS.read_text()
    shown = text.split("<!-- limits:begin -->\n", 1)[1].split("<!-- limits:end -->", 1)[0]
    assert shown == markdown_table(), "regenerate docs/limits.md's table from domain/limits.py"


def test_every_limit_has_a_probe() -> None:
    assert set(PROBES) == {lim.key for lim in LIMITS}


@pytest.mark.parametrize("key", list(PROBES))
def test_one_past_each_bound_is_refused(server: str, key: str) -> None:
    probe, expected = PROBES[key]
    bound = MAX_QUEUES if key == "queues_per_tenant" else BY_KEY[key].value
    assert probe(server, bound) == expected
