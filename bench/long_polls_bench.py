"""Many long polls on one queue: what each message sent to it costs the server, and what
another project waits meanwhile.

    ./dev bench long_polls [--stores sqlite,postgres] [--waiters 1,50,300] [--messages 100]
                           [--rate 50] [--base CHECKOUT]

For each store and count of waiters, a fresh `deadletter serve`: that many SQS long polls
(`WaitTimeSeconds=20`, one message each) wait on one queue, the server's CPU measured over
three seconds of that; then `--messages` messages are sent to it one at a time at `--rate` a
second, each received by a long poll and deleted. The server's CPU (every thread) over that
phase, per message, and the time until the last one was received. Meanwhile another project
sends and claims one message at a time on its own queue through the Zaqar face: the p50 /
p99 of that cycle. With `--base`, each count runs on that checkout's code first, then on
this one's.

Writes bench/results/long_polls.json and long_polls.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.faces_bench import server_cpu_ns
from bench.peers.systems import POSTGRES_ADMIN, ROOT, WORK, Process, free_port, serve_command

RESULTS = Path(__file__).parent / "results"
SQS = {"Content-Type": "application/x-amz-json-1.0"}
QUIET = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": "quiet"}
IDLE = 3.0  # seconds of waiting with nothing sent, before the messages


def _sqs(action: str) -> dict[str, str]:
    return {**SQS, "X-Amz-Target": f"AmazonSQS.{action}"}


class _Herd:
    """One queue's long polls and another project's requests, over one client."""

    def __init__(self, http: httpx.AsyncClient, messages: int) -> None:
        self.http, self.messages = http, messages
        self.queue = ""
        self.received = 0
        self.done = asyncio.Event()
        self.quiet: list[float] = []

    async def sqs(self, action: str, **body: Any) -> dict[str, Any]:
        r = await self.http.post("/", headers=_sqs(action), content=json.dumps(body))
        r.raise_for_status()
        return r.json()  # type: ignore[no-any-return]

    async def long_poll(self) -> None:
        while not self.done.is_set():
            got = await self.sqs("ReceiveMessage", QueueUrl=self.queue, WaitTimeSeconds=20)
            for m in got.get("Messages", []):
                await self.sqs(
                    "DeleteMessage", QueueUrl=self.queue, ReceiptHandle=m["ReceiptHandle"]
                )
                self.received += 1
                if self.received >= self.messages:
                    self.done.set()

    async def quiet_project(self) -> None:
        """Another project: a send and a claim of one message, 20 times a second."""
        sent = {"messages": [{"body": 1}]}
        while not self.done.is_set():
            t = time.perf_counter()
            await self.http.post("/v2/queues/quiet/messages", headers=QUIET, json=sent)
            r = await self.http.post("/v2/queues/quiet/claims", headers=QUIET, json={"ttl": 60})
            self.quiet.append(time.perf_counter() - t)
            for m in r.json()["messages"] if r.status_code == 201 else []:
                await self.http.delete(m["href"], headers=QUIET)
            await asyncio.sleep(0.05)


async def _herd(base: str, pid: int, waiters: int, messages: int, rate: float) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=waiters + 20, max_keepalive_connections=waiters + 20)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as http:
        herd = _Herd(http, messages)
        herd.queue = (await herd.sqs("CreateQueue", QueueName="herd"))["QueueUrl"]
        await http.put("/v2/queues/quiet", headers=QUIET, json={})
        tasks = [asyncio.create_task(herd.long_poll()) for _ in range(waiters)]
        await asyncio.sleep(2)  # every long poll waiting
        idle = server_cpu_ns(pid)
        await asyncio.sleep(IDLE)
        idle = server_cpu_ns(pid) - idle
        tasks.append(asyncio.create_task(herd.quiet_project()))
        cpu, start = server_cpu_ns(pid), time.monotonic()
        for _ in range(messages):
            await herd.sqs("SendMessage", QueueUrl=herd.queue, MessageBody="x")
            await asyncio.sleep(1 / rate)
        await asyncio.wait_for(herd.done.wait(), 60)
        seconds, cpu = time.monotonic() - start, server_cpu_ns(pid) - cpu
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    quiet = sorted(herd.quiet)
    return {
        "waiters": waiters,
        "seconds": seconds,
        "cpu_ms_per_message": cpu / 1e6 / messages,
        "idle_cpu_share": idle / 1e9 / IDLE,
        "quiet_p50_ms": 1000 * statistics.median(quiet),
        "quiet_p99_ms": 1000 * quiet[min(len(quiet) - 1, int(len(quiet) * 0.99))],
    }


def run(src: Path, store: str, waiters: int, messages: int, rate: float) -> dict[str, Any]:
    port = free_port()
    with _database(store) as db:
        proc = Process(
            [*serve_command(), "--port", str(port), "--db", db, "--log-level", "warning"],
            WORK / "logs" / "long_polls.log",
            env={"PYTHONPATH": os.pathsep.join([str(src / "src"), str(ROOT)])},
        )
        try:
            base = f"http://127.0.0.1:{port}"
            proc.wait_http(f"{base}/v2")
            return asyncio.run(_herd(base, proc.popen.pid, waiters, messages, rate))
        finally:
            proc.stop()


@contextmanager
def _database(store: str) -> Iterator[str]:
    """A fresh database of `store`'s kind, for one server."""
    name = f"bench_{uuid.uuid4().hex[:10]}"
    if store == "sqlite":
        folder = WORK / "long_polls"
        folder.mkdir(parents=True, exist_ok=True)
        yield f"sqlite:///{folder / name}.db"
        return
    import psycopg

    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def render(results: list[dict[str, Any]]) -> str:
    lines = [
        "| store | code | long polls waiting | server CPU while they wait, share of a core | server"
        " CPU ms per message | seconds | other project's send and claim, p50 / p99 ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['store']} | {r['code']} | {r['waiters']} | {100 * r['idle_cpu_share']:.1f}% | "
            f"{r['cpu_ms_per_message']:.1f} | {r['seconds']:.2f} | "
            f"{r['quiet_p50_ms']:.1f} / {r['quiet_p99_ms']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./dev bench long_polls", description=__doc__)
    ap.add_argument("--waiters", default="1,50,300", help="long polls waiting, comma-separated")
    ap.add_argument("--messages", type=int, default=100)
    ap.add_argument("--rate", type=float, default=50.0, help="messages sent per second")
    ap.add_argument("--base", help="another checkout, run first at each count")
    ap.add_argument("--stores", default="sqlite", help="sqlite, postgres or both, comma-separated")
    args = ap.parse_args(argv)
    codes = [("base", Path(args.base).resolve())] if args.base else []
    codes.append(("this", ROOT))
    results = []
    counts = [int(w) for w in args.waiters.split(",") if w]
    for store, waiters in ((s, w) for s in args.stores.split(",") if s for w in counts):
        for code, src in codes:
            result = {
                "store": store,
                "code": code,
                **run(src, store, waiters, args.messages, args.rate),
            }
            print(json.dumps(result), flush=True)
            results.append(result)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "long_polls.json").write_text(json.dumps(results, indent=2) + "\n")
    table = render(results)
    (RESULTS / "long_polls.md").write_text(table)
    print(table)
    return 0
