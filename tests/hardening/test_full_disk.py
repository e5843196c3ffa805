"""A full disk under a running SQLite server: writes are refused with 503 on every face and
protocol (the disk is full, try again later) while reads go on, nothing acknowledged is lost,
the database passes `PRAGMA integrity_check`, and the server takes writes again as soon as
there is room.

Why 503 and not 507 (WebDAV's Insufficient Storage): to the client the condition is
temporary and the same request succeeds once an operator frees space, which is what 503 and
`Retry-After` say; botocore and Zaqar clients retry a 503 and give up on a 507; and AWS has
no disk-full error, so the SQS face could only say ServiceUnavailable anyway.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.serve_process import start, stop
from tests.hardening.outage_load import ACCOUNT, JSON_TYPE
from tests.hardening.test_outages import log_lines, wait_for
from tests.services import missing

QUEUE = "work"
BODY = "x" * 4000


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted for the test (root only)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        missing(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(path: Path, leave: int = 0) -> None:
    """Write `path` until the disk has at most `leave` bytes free."""
    with path.open("ab") as f:
        try:
            while os.statvfs(path).f_bavail * os.statvfs(path).f_frsize > leave:
                f.write(b"\0" * 4096)
                f.flush()
        except OSError:
            pass  # full


def test_a_full_disk_refuses_writes_with_503_and_loses_nothing(
    small_disk: Path, tmp_path: Path
) -> None:
    database = small_disk / "deadletter.db"
    proc, url = start(f"sqlite:///{database}", tmp_path)
    cid = {"Client-ID": str(uuid.uuid4())}
    sent: set[str] = set()
    statuses: set[int] = set()
    try:
        with httpx.Client(base_url=url, headers=cid, timeout=60) as c:
            assert c.put(f"/v2/queues/{QUEUE}", json={}).status_code == 201

            def post(body: str = BODY) -> httpx.Response:
                r = c.post(f"/v2/queues/{QUEUE}/messages", json={"messages": [{"body": body}] * 5})
                statuses.add(r.status_code)
                if r.status_code == 201:
                    sent.update(h.rsplit("/", 1)[1] for h in r.json()["resources"])
                return r

            # Given a server whose disk has little room left,
            fill(small_disk / "filler-1", leave=300_000)
            # when producers write until it is full,
            refused = None
            for _ in range(500):
                r = post()
                if r.status_code != 201:
                    refused = r
                    break
            fill(small_disk / "filler-2")
            # then the write is refused, in Zaqar's words, as temporary;
            assert refused is not None and refused.status_code == 503, statuses
            assert refused.headers["Retry-After"] == "5"
            assert "the disk is full" in refused.json()["description"]
            assert post().status_code == 503
            # so is a send in both of SQS's protocols;
            queue_url = f"{url}/{ACCOUNT}/{QUEUE}"
            j = sqs_json(c, "SendMessage", {"QueueUrl": queue_url, "MessageBody": "b"})
            assert j.status_code == 503, j.text
            assert j.headers["x-amzn-query-error"] == "ServiceUnavailable;Receiver"
            q = c.post(
                "/",
                data={"Action": "SendMessage", "QueueUrl": queue_url, "MessageBody": "b"},
            )
            assert q.status_code == 503 and "<Code>ServiceUnavailable</Code>" in q.text
            # reads still answer, and /v2/health says the store is degraded and why.
            assert c.get(f"/v2/queues/{QUEUE}/stats").status_code == 200
            health = c.get("/v2/health")
            assert health.status_code == 503
            assert health.json()["status"] == "degraded"
            assert health.json()["reason"] == "the disk is full"
            assert health.json()["storage_reachable"] is True

            # Once there is room again, writes go through at once
            (small_disk / "filler-2").unlink()
            (small_disk / "filler-1").unlink()
            assert post().status_code == 201
            # (the outage ends at the first write a second after the last refusal)
            wait_for(
                lambda: post("y").status_code == 201 and c.get("/v2/health").status_code == 200,
                30,
                "health to say ok",
            )
            assert c.get("/v2/health").json()["status"] == "ok"
            # and every acknowledged message is there to be read. (A listing, not a receive:
            # a receive claims, and a claim's writes could fill a 2 MiB disk again.)
            received: set[str] = set()
            listing = f"/v2/queues/{QUEUE}/messages?echo=true&include_claimed=true&limit=20"
            page: str | None = listing
            while page:
                r = c.get(page)
                assert r.status_code in (200, 204), r.text
                listed = r.json() if r.status_code == 200 else {"messages": []}
                received.update(m["id"] for m in listed["messages"])
                after = [link["href"] for link in listed.get("links", []) if link["rel"] == "next"]
                page = after[0] if listed["messages"] and after else None
    finally:
        stop(proc)
    assert sent and sent <= received
    assert statuses <= {200, 201, 503}, statuses
    # The file is whole, and the log said it once each way, without a traceback.
    with contextlib.closing(sqlite3.connect(database)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    lines = log_lines(tmp_path, url)
    assert not [line for line in lines if "exception" in line]
    went = [line for line in lines if str(line["message"]).startswith("store unavailable")]
    came = [line for line in lines if line["message"] == "store available again"]
    assert [line["reason"] for line in went] == ["the disk is full"], json.dumps(went)
    assert len(came) == 1


def sqs_json(c: httpx.Client, action: str, params: dict[str, object]) -> httpx.Response:
    return c.post(
        "/",
        json=params,
        headers={"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": JSON_TYPE},
    )
