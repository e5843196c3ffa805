"""What a bound costs a send: one message at a time to a queue held at its bound.

    ./dev bench bounds [--sends 500] [--depths 100,10000] [--no-postgres]

On each store, for each depth, the milliseconds (median) of sending one 256-byte message to
a queue of that many messages: unbounded, bounded by `max_messages` (drop-head, so every send
also pushes the oldest out to the DLQ), and bounded by `max_bytes` (drop-head), whose check
reads the bodies' sizes of the whole queue; and by `max_messages` into a DLQ itself bounded
by `max_messages` (drop-head), held full, so every send also pushes the DLQ's oldest dead
letter out. One producer: what is measured is the work a
send does, not the turns concurrent senders take. Prints a table.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.engine_bench import BODY, P, store_url
from deadletter.domain.model import NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.engine.engine import Engine
from deadletter.storage import open_store

FILL_BATCH = 1000


def _shapes(depth: int) -> dict[str, QueueSettings]:
    policy = DeadLetterPolicy(target="dlq", max_claims=5)
    return {
        "unbounded": QueueSettings(dead_letter=policy),
        "max_messages": QueueSettings(dead_letter=policy, max_messages=depth),
        "max_bytes": QueueSettings(dead_letter=policy, max_bytes=depth * len(BODY)),
        "bounded_dlq": QueueSettings(
            dead_letter=DeadLetterPolicy(target="bounded-dlq", max_claims=5), max_messages=depth
        ),
    }


def run(backend: str, depth: int, sends: int) -> dict[str, float]:
    out = {}
    with store_url(backend) as url:
        store = open_store(url)
        try:
            engine = Engine(store)
            engine.create_queue(P, "dlq")
            engine.create_queue(P, "bounded-dlq", settings=QueueSettings(max_messages=depth))
            for start in range(0, depth, FILL_BATCH):
                batch = [NewMessage(body=BODY)] * min(FILL_BATCH, depth - start)
                engine.send(P, "bounded-dlq", messages=batch)
            for name, settings in _shapes(depth).items():
                engine.create_queue(P, name, settings=settings)
                for start in range(0, depth, FILL_BATCH):
                    batch = [NewMessage(body=BODY)] * min(FILL_BATCH, depth - start)
                    engine.send(P, name, messages=batch)
                times = []
                for _ in range(sends):
                    began = time.perf_counter()
                    engine.send(P, name, messages=[NewMessage(body=BODY)])
                    times.append((time.perf_counter() - began) * 1000)
                out[name] = statistics.median(times)
        finally:
            store.close()
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench bounds", description=__doc__)
    parser.add_argument("--sends", type=int, default=500)
    parser.add_argument("--depths", default="100,10000")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args(argv)
    backends = ["sqlite"] if args.no_postgres else ["sqlite", "postgres"]
    print("| store | depth | unbounded ms | max_messages ms | max_bytes ms | bounded DLQ ms |")
    print("|---|---|---|---|---|---|")
    for backend in backends:
        for depth in (int(d) for d in args.depths.split(",")):
            got = run(backend, depth, args.sends)
            print(
                f"| {backend} | {depth} | {got['unbounded']:.2f} | {got['max_messages']:.2f}"
                f" | {got['max_bytes']:.2f} | {got['bounded_dlq']:.2f} |"
            )
    return 0
