"""Crash safety of `deadletter serve`: kill -9 under load loses no acknowledged message and
never duplicates one in the DLQ."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.serve_process import start, stop

PRODUCERS = 2
CONSUMERS = 2
LOAD_SECONDS = 1.5


class Ledger:
    """What the clients were told, shared by their threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: set[str] = set()  # 201 received
        self.acked: set[str] = set()  # 204 received for a delete with a claim
        self.deleting: set[str] = set()  # delete sent; the answer may have been lost

    def add(self, name: str, ids: list[str]) -> None:
        with self.lock:
            getattr(self, name).update(ids)


def produce(url: str, ledger: Ledger, stop: threading.Event, worker: int) -> None:
    n = 0
    with httpx.Client(base_url=url, headers={"Client-ID": str(uuid.uuid4())}, timeout=10) as c:
        while not stop.is_set():
            batch = [
                {"body": {"worker": worker, "n": n + i, "poison": (n + i) % 4 == 0}}
                for i in range(5)
            ]
            n += 5
            try:
                r = c.post("/v2/queues/work/messages", json={"messages": batch})
            except httpx.TransportError:
                return
            if r.status_code == 201:
                ledger.add("sent", [h.rsplit("/", 1)[1] for h in r.json()["resources"]])


def consume(url: str, ledger: Ledger, stop: threading.Event) -> None:
    with httpx.Client(base_url=url, headers={"Client-ID": str(uuid.uuid4())}, timeout=10) as c:
        while not stop.is_set():
            try:
                r = c.post("/v2/queues/work/claims?limit=5", json={"ttl": 60})
                if r.status_code != 201:
                    continue
                claim_href = r.headers["Location"]
                for m in r.json()["messages"]:
                    if m["body"]["poison"]:
                        continue
                    ledger.add("deleting", [m["id"]])
                    if c.delete(m["href"]).status_code == 204:
                        ledger.add("acked", [m["id"]])
                # Give the poison back at once so that it is claimed again and dead-lettered.
                c.delete(claim_href)
            except httpx.TransportError:
                return


def all_ids(url: str, queue: str) -> list[str]:
    headers = {"Client-ID": str(uuid.uuid4())}
    ids: list[str] = []
    href: str | None = f"/v2/queues/{queue}/dead_letters?limit=1000"
    with httpx.Client(base_url=url, headers=headers, timeout=30) as c:
        # The dead-letter browse lists every message of a queue, claimed and delayed included.
        while href:
            page: dict[str, Any] = c.get(href).json()
            ids += [m["id"] for m in page["messages"]]
            href = page["links"][0]["href"] if page["links"] else None
    return ids


@pytest.mark.slow
def test_kill_9_under_load_loses_and_duplicates_nothing(store_url: str, tmp_path: Path) -> None:
    db = store_url
    proc, url = start(db, tmp_path)
    ledger = Ledger()
    try:
        headers = {"Client-ID": str(uuid.uuid4())}
        assert httpx.put(f"{url}/v2/queues/work-dlq", json={}, headers=headers).status_code == 201
        policy = {"_max_claim_count": 2, "_dead_letter_queue": "work-dlq"}
        assert httpx.put(f"{url}/v2/queues/work", json=policy, headers=headers).status_code == 201
        # Given producers and consumers (some messages are poison) running against the server
        stopping = threading.Event()
        threads = [
            threading.Thread(target=produce, args=(url, ledger, stopping, i))
            for i in range(PRODUCERS)
        ] + [
            threading.Thread(target=consume, args=(url, ledger, stopping)) for _ in range(CONSUMERS)
        ]
        for t in threads:
            t.start()
        time.sleep(LOAD_SECONDS)  # real time is the point: the kill must land mid-load
        # when the server is killed with SIGKILL in the middle of it
        proc.kill()
        proc.wait(timeout=30)
        stopping.set()
        for t in threads:
            t.join(timeout=30)
    finally:
        stop(proc)
    assert ledger.sent and ledger.acked
    # and restarted on the same file,
    proc, url = start(db, tmp_path)
    try:
        in_queue = all_ids(url, "work")
        in_dlq = all_ids(url, "work-dlq")
    finally:
        stop(proc)
    # then no message is duplicated, in the DLQ or across the two queues,
    assert len(in_dlq) == len(set(in_dlq))
    assert len(in_queue) == len(set(in_queue))
    assert not set(in_queue) & set(in_dlq)
    present = set(in_queue) | set(in_dlq)
    # every acknowledged delete is gone,
    assert not present & ledger.acked
    # and every message whose receipt was acknowledged is in its queue, in the DLQ, or was
    # deleted by a consumer (acked, or a delete whose answer the kill swallowed).
    lost = ledger.sent - present - ledger.deleting
    assert not lost, f"{len(lost)} acknowledged messages lost"
    assert in_dlq, "poison messages reached the DLQ"
