"""Webhook delivery: how fast one subscription is notified, and how long a quiet project waits
while another floods.

    PYTHONPATH=src:. python -m bench webhooks [--messages 300] [--flood 2000] [--postgres]

On a fresh store, with the sender as `deadletter serve` runs it (default `DeliverySettings`):

- rate: one subscription to a local receiver that answers 204 at once; `--messages` messages
  are sent in posts of 20, and the time until the receiver has them all gives notifications
  per second.
- fairness: project `flood` has `--flood` notifications owed to 10 subscriptions of a
  receiver that answers after 50 ms; then project `quiet` posts one message to its own
  subscription, ten times. Reports the quiet notification's latency (post to arrival): p50,
  p99 and max.

Prints a markdown table and writes bench/results/webhooks.json.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.engine_bench import store_url
from deadletter.adapters.webhooks import HttpxSender
from deadletter.domain.model import NewMessage
from deadletter.engine.deliveries import Deliveries
from deadletter.engine.destinations import Destinations
from deadletter.engine.engine import Engine
from deadletter.storage import open_store

RESULTS = Path(__file__).parent / "results"


class Receiver:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.arrivals: list[tuple[float, Any]] = []
        self.cond = threading.Condition()
        self.url = ""

    def wait_for(self, test: Any, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: test(self.arrivals), timeout)


@contextmanager
def receiving(delay: float = 0.0) -> Iterator[Receiver]:
    receiver = Receiver(delay)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if receiver.delay:
                time.sleep(receiver.delay)
            with receiver.cond:
                receiver.arrivals.append((time.monotonic(), json.loads(raw)))
                receiver.cond.notify_all()
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def sending(url: str) -> Iterator[Engine]:
    engine = Engine(open_store(url))
    destinations = Destinations(["127.0.0.0/8"])
    engine.subscriptions.destinations = destinations
    deliveries = Deliveries(engine, HttpxSender(destinations))
    deliveries.start()
    try:
        yield engine
    finally:
        deliveries.stop()
        engine.store.close()


def post(engine: Engine, project: str, queue: str, n: int, tag: str = "") -> None:
    for start in range(0, n, 20):
        batch = [
            NewMessage(json.dumps({"n": i, "tag": tag}).encode())
            for i in range(start, min(n, start + 20))
        ]
        engine.send(project, queue, messages=batch)


def rate(url: str, messages: int) -> dict[str, float]:
    with store_url(url) as db, sending(db) as engine, receiving() as hook:
        engine.create_queue("p", "q")
        engine.subscriptions.create("p", "q", subscriber=hook.url, ttl=3600, options={})
        began = time.monotonic()
        post(engine, "p", "q", messages)
        assert hook.wait_for(lambda a: len(a) >= messages, 300), "not all delivered"
        seconds = time.monotonic() - began
    return {"messages": messages, "seconds": seconds, "per_second": messages / seconds}


def fairness(url: str, flood: int) -> dict[str, float]:
    latencies: list[float] = []
    with store_url(url) as db, sending(db) as engine, receiving(0.05) as slow, receiving() as fast:
        engine.create_queue("flood", "q")
        for i in range(10):
            engine.subscriptions.create(
                "flood", "q", subscriber=f"{slow.url}/{i}", ttl=3600, options={}
            )
        post(engine, "flood", "q", flood // 10)
        engine.create_queue("quiet", "q")
        engine.subscriptions.create("quiet", "q", subscriber=fast.url, ttl=3600, options={})
        for i in range(10):
            sent = time.monotonic()
            post(engine, "quiet", "q", 1, tag=f"quiet-{i}")
            assert fast.wait_for(lambda a, i=i: len(a) > i, 120), "quiet webhook starved"
            latencies.append(fast.arrivals[i][0] - sent)
        left = flood - len(slow.arrivals)
    latencies.sort()
    return {
        "p50": latencies[len(latencies) // 2],
        "p99": latencies[-1],
        "max": latencies[-1],
        "flood_left_when_done": left,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench webhooks")
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--flood", type=int, default=2000)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args(argv)
    backend = "postgres" if args.postgres else "sqlite"
    result = {
        "backend": backend,
        "rate": rate(backend, args.messages),
        "fairness": fairness(backend, args.flood),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "webhooks.json").write_text(json.dumps(result, indent=2) + "\n")
    r, f = result["rate"], result["fairness"]
    print("| measure | value |\n|---|---|")
    print(f"| one subscription, {r['messages']} notifications | {r['per_second']:.0f} /s |")
    print(f"| quiet project's notification while another floods, p50 | {f['p50']:.3f} s |")
    print(f"| the same, max of 10 | {f['max']:.3f} s |")
    print(f"| flood notifications still owed at the end | {f['flood_left_when_done']} |")
    return 0
