"""Concurrent writers on one PostgreSQL queue: where their transactions wait.

    ./dev bench writers [--producers 4] [--consumers 4] [--seconds 20] [--rounds 3]
                        [--base CHECKOUT] [--out bench/results/writers]

Producers send batches of ten 1 KiB messages and consumers claim ten and delete them, each in
a thread of one process calling the engine (as a server's worker threads do), on a fresh
database, for a fixed time. Meanwhile the sessions of that database are sampled every 10 ms
in `pg_stat_activity`: what each active one waits for (a row lock held by another
transaction, the WAL flush of a commit, the notification lock...). `--base` runs the same
with the code of another checkout (its `src/`), alternating with this one round by round, in
a fresh process each time. Reports messages per second (sent + deleted) with the median of
the rounds, and the waits seen, per second of run. Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from bench.child import run_child

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).parent.parent


def run_once(producers: int, consumers: int, seconds: float) -> dict[str, Any]:
    """One run in this process, with whatever `deadletter` is on the path."""
    import psycopg

    from bench.layers_bench import BATCH, BODY, PROJECT, QUEUE, Database
    from bench.peers.systems import POSTGRES_ADMIN
    from deadletter.domain.model import NewMessage
    from deadletter.engine.engine import Engine
    from deadletter.storage import open_store

    db = Database("postgres", Path("/tmp"))
    store = open_store(db.url)
    engine = Engine(store)
    engine.create_queue(PROJECT, QUEUE)
    body = BODY.encode()
    moved = collections.Counter[str]()
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def produce() -> None:
        while time.monotonic() < stop:
            engine.send(PROJECT, QUEUE, messages=[NewMessage(body, ttl=3600) for _ in range(BATCH)])
            with lock:
                moved["sent"] += BATCH

    def consume() -> None:
        while time.monotonic() < stop:
            claim = engine.claim(PROJECT, QUEUE, limit=BATCH, ttl=300, grace=60)
            if claim.messages:
                engine.delete_messages(PROJECT, QUEUE, ids=[m.id for m in claim.messages])
                with lock:
                    moved["deleted"] += len(claim.messages)

    threads = [threading.Thread(target=produce) for _ in range(producers)]
    threads += [threading.Thread(target=consume) for _ in range(consumers)]
    started = time.monotonic()
    for t in threads:
        t.start()
    waits = collections.Counter[str]()
    samples = 0
    sample = (
        "SELECT COALESCE(wait_event_type || ': ' || wait_event, 'running') AS wait,"
        " split_part(ltrim(query), ' ', 1) || ' ' || split_part(ltrim(query), ' ', 3) AS what"
        " FROM pg_stat_activity WHERE datname = %s AND state = 'active'"
    )
    try:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            while time.monotonic() < stop:
                for wait, what in conn.execute(sample, (db.name,)):
                    waits[f"{wait} ({what})"] += 1
                samples += 1
                time.sleep(0.01)
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
    finally:
        store.close()
        db.close()
    return {
        "seconds": round(elapsed, 2),
        "sent_per_second": round(moved["sent"] / elapsed),
        "deleted_per_second": round(moved["deleted"] / elapsed),
        "per_second": round((moved["sent"] + moved["deleted"]) / elapsed),
        # sessions seen in each state, per sample: how many wait for it at a time, on average
        "waits": {k: round(v / samples, 2) for k, v in waits.most_common(12)},
    }


def run_variant(src: Path, args: argparse.Namespace) -> dict[str, Any]:
    argv = ["--producers", str(args.producers), "--consumers", str(args.consumers)]
    return run_child(src, "writers", [*argv, "--seconds", str(args.seconds)])


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Concurrent writers on one PostgreSQL queue: {report['producers']} producers and"
        f" {report['consumers']} consumers (engine calls in threads of one process, batches of"
        f" 10), {report['seconds']} s a round, {report['rounds']} rounds alternated; load average"
        f" before and after: {report['load_average']}.",
        "",
        "| code | messages/s, median (min-max) | sent/s | deleted/s | ratio to base |",
        "|---|---:|---:|---:|---:|",
    ]
    medians = {
        name: statistics.median(r["per_second"] for r in runs)
        for name, runs in report["variants"].items()
    }
    base = medians.get("base")
    for name, runs in report["variants"].items():
        rates = [r["per_second"] for r in runs]
        sent = statistics.median(r["sent_per_second"] for r in runs)
        deleted = statistics.median(r["deleted_per_second"] for r in runs)
        ratio = f"{medians[name] / base:.2f}" if base else ""
        lines.append(
            f"| {name} | {medians[name]:,.0f} ({min(rates):,}-{max(rates):,}) | {sent:,.0f}"
            f" | {deleted:,.0f} | {ratio} |"
        )
    lines += ["", "Sessions seen waiting, on average per sample, last round of each:", ""]
    for name, runs in report["variants"].items():
        waits = runs[-1]["waits"].items()
        lines.append(f"- **{name}**: " + "; ".join(f"{k} {v}" for k, v in waits))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./dev bench writers", description=__doc__.split("\n")[0])
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base", help="a checkout whose src/ is run beside this one")
    ap.add_argument("--out", default=str(RESULTS / "writers"))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(run_once(args.producers, args.consumers, args.seconds)))
        return 0
    variants = {"this": ROOT / "src"}
    if args.base:
        variants["base"] = Path(args.base).resolve() / "src"
    report: dict[str, Any] = {
        "producers": args.producers,
        "consumers": args.consumers,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "variants": {name: [] for name in variants},
    }
    for round_ in range(args.rounds):
        for name, src in variants.items():
            result = run_variant(src, args)
            report["variants"][name].append(result)
            print(f"round {round_ + 1} {name}: {result['per_second']:,} msg/s", flush=True)
    report["load_average"] += [round(x, 2) for x in os.getloadavg()]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))
    return 0
