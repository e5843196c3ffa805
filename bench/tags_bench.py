"""Consumer tags: send and claim throughput on a queue with 0, 1, 4 and 16 tags.

    PYTHONPATH=src:. python -m bench tags [--messages 1000] [--batch 10] [--postgres]

For each number of tags T, on a fresh store: send the messages in batches (what a send costs
with T tags: no row per tag is written), then, for the queue's untagged consumers and for
each tag in turn, claim and acknowledge every message in batches. Reports messages per
second: sends, the claims and acks of one group (the first tag, or the untagged consumers
with no tags), and all deliveries of every group together. Writes bench/results/tags.json
and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from bench.engine_bench import store_url
from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage import open_store

RESULTS = Path(__file__).parent / "results"
TAG_COUNTS = (0, 1, 4, 16)
BODY = b"x" * 256
P = "bench"


def drain(engine: Engine, tag: str | None, batch: int) -> int:
    """Claim and acknowledge everything the group has; how many messages."""
    done = 0
    while True:
        claim = engine.claim(P, "q", limit=batch, ttl=3600, tag=tag)
        if not claim.messages:
            return done
        held: list[tuple[str, str | None]] = [(m.id, claim.id) for m in claim.messages]
        engine.delete_held(P, "q", held=held, tag=tag)
        done += len(held)


def run(backend: str, tags: int, messages: int, batch: int) -> dict[str, float]:
    with store_url(backend) as url:
        store = open_store(url)
        try:
            engine = Engine(store)
            engine.create_queue(P, "q")
            names = [f"t{i}" for i in range(tags)]
            for name in names:
                engine.create_tag(P, "q", name=name)
            started = time.perf_counter()
            for _ in range(messages // batch):
                engine.send(P, "q", messages=[NewMessage(body=BODY)] * batch)
            send = messages / (time.perf_counter() - started)
            groups: list[str | None] = [*names, None]
            timings: list[float] = []
            for group in groups:
                started = time.perf_counter()
                assert drain(engine, group, batch) == messages, group
                timings.append(time.perf_counter() - started)
            assert engine.stats(P, "q").total == 0  # every group done: nothing left behind
            return {
                "send msg/s": send,
                "claim+ack msg/s, one group": messages / timings[0],
                "deliveries/s, all groups": messages * len(groups) / sum(timings),
            }
        finally:
            store.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench tags", description=__doc__)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--postgres", action="store_true", help="Run on PostgreSQL too.")
    args = parser.parse_args(argv)
    backends = ["sqlite", *(["postgres"] if args.postgres else [])]
    results: list[dict[str, Any]] = []
    for backend in backends:
        for tags in TAG_COUNTS:
            figures = run(backend, tags, args.messages, args.batch)
            results.append({"backend": backend, "tags": tags, **figures})
            print(backend, tags, {k: round(v) for k, v in figures.items()}, flush=True)
    RESULTS.mkdir(exist_ok=True)
    doc = {"messages": args.messages, "batch": args.batch, "results": results}
    (RESULTS / "tags.json").write_text(json.dumps(doc, indent=2) + "\n")
    columns = ["send msg/s", "claim+ack msg/s, one group", "deliveries/s, all groups"]
    print()
    print("| backend | tags | " + " | ".join(columns) + " |")
    print("|---|---:|" + "---:|" * len(columns))
    for r in results:
        cells = " | ".join(f"{r[c]:,.0f}" for c in columns)
        print(f"| {r['backend']} | {r['tags']} | {cells} |")
    return 0
