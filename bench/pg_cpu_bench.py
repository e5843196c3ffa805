"""W1's cycle through the engine on PostgreSQL, without HTTP: the CPU it costs per 1,000
messages in this process (the engine and the driver), in the store's one backend, and in all of
PostgreSQL's processes on this machine (read from /proc: every `postgres` process, the
postmaster's ended children with it, so other work on the same server counts too).

    ./dev bench pg_cpu [--runs 3] [--cycles 600] [--body-size 100] [--on-loop]
                       [--base CHECKOUT] [--out NAME]

A cycle sends ten messages (100-byte bodies; the peers bench sends 1,024), claims ten and
deletes them by id, on a queue
that holds 2,000; 50 cycles warm the connection first. Each run is a child process on a fresh
database; with `--base` the runs of this code and of the other checkout's `src/` alternate,
and the medians are reported beside the load average of each run.

`--on-loop` runs the calls as the server's hot routes do, through `api.threads.on_loop` on
uvloop's event loop: four producers and four consumers at once, each with `--cycles` sends or claims
and deletes, so that their calls share groups on the store's pool (its backends are then
counted only in *all PostgreSQL*).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from bench.child import run_child
from bench.proc import postgres_cpu_seconds, process_cpu_seconds

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parent.parent
BATCH = 10
PRELOAD = 2000
WARM_UP = 50


def run_once(cycles: int, body_size: int = 100) -> dict[str, float]:
    """One run in this process, with whatever `deadletter` is on the path."""
    from bench.layers_bench import Database
    from deadletter.domain.model import NewMessage
    from deadletter.engine.engine import Engine
    from deadletter.storage.postgres.backend import PostgresStore

    db = Database("postgres", Path("/tmp"))
    store = PostgresStore(db.url, pool_size=1)  # one connection: its backend does the cycles
    try:
        engine = Engine(store)
        engine.create_queue("p", "q")

        def send() -> None:
            engine.send("p", "q", messages=[NewMessage(body=b"x" * body_size, ttl=3600)] * BATCH)

        def cycle() -> None:
            send()
            ids = [m.id for m in engine.claim("p", "q", limit=BATCH, ttl=60).messages]
            engine.delete_messages("p", "q", ids=ids)

        for _ in range(PRELOAD // BATCH):
            send()
        for _ in range(WARM_UP):
            cycle()
        with store._pool.connection() as own:
            backend = int(own.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"])
        before = (
            time.process_time(),
            process_cpu_seconds(backend),
            postgres_cpu_seconds(),
            time.perf_counter(),
        )
        for _ in range(cycles):
            cycle()
        after = (
            time.process_time(),
            process_cpu_seconds(backend),
            postgres_cpu_seconds(),
            time.perf_counter(),
        )
    finally:
        store.close()
        db.close()
    thousands = cycles * BATCH / 1000
    process, own_backend, postgres, seconds = (b - a for a, b in zip(before, after, strict=True))
    return {
        "process_ms": round(process / thousands * 1000),
        "backend_ms": round(own_backend / thousands * 1000),
        "postgres_ms": round(postgres / thousands * 1000),
        "rate": round(cycles * BATCH / seconds),
        "load": round(os.getloadavg()[0], 1),
    }


SIDES = 4  # producers, and as many consumers, with --on-loop


def run_on_loop(cycles: int, body_size: int = 100) -> dict[str, float]:
    """`run_once` with the calls on an event loop, `SIDES` producers and consumers at once."""
    import asyncio

    from bench.layers_bench import Database
    from deadletter.api.threads import on_loop
    from deadletter.domain.model import NewMessage
    from deadletter.engine.engine import Engine
    from deadletter.storage.postgres.backend import PostgresStore

    db = Database("postgres", Path("/tmp"))
    store = PostgresStore(db.url)
    batch = [NewMessage(body=b"x" * body_size, ttl=3600)] * BATCH
    try:
        engine = Engine(store)
        engine.create_queue("p", "q")

        async def produce(sends: int) -> None:
            for _ in range(sends):
                await on_loop(engine, engine.send, "p", "q", messages=batch)

        async def consume(messages: int) -> None:
            while messages > 0:
                claim = await on_loop(engine, engine.claim, "p", "q", limit=BATCH, ttl=60)
                if not claim.messages:
                    await asyncio.sleep(0.001)
                    continue
                ids = [m.id for m in claim.messages]
                await on_loop(engine, engine.delete_messages, "p", "q", ids=ids)
                messages -= len(ids)

        async def sides(sends: int) -> None:
            await asyncio.gather(
                *(produce(sends) for _ in range(SIDES)),
                *(consume(sends * BATCH) for _ in range(SIDES)),
            )

        async def measured() -> tuple[float, ...]:
            await produce(PRELOAD // BATCH)
            await consume(PRELOAD)
            await sides(WARM_UP // SIDES)
            before = (time.process_time(), postgres_cpu_seconds(), time.perf_counter())
            await sides(cycles)
            after = (time.process_time(), postgres_cpu_seconds(), time.perf_counter())
            return tuple(b - a for a, b in zip(before, after, strict=True))

        import uvloop  # the server's loop (`server.EVENT_LOOP`)

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            process, postgres, seconds = runner.run(measured())
    finally:
        store.close()
        db.close()
    messages = SIDES * cycles * BATCH
    return {
        "process_ms": round(process / (messages / 1000) * 1000),
        "backend_ms": 0,
        "postgres_ms": round(postgres / (messages / 1000) * 1000),
        "rate": round(messages / seconds),
        "load": round(os.getloadavg()[0], 1),
    }


def markdown(
    runs: dict[str, list[dict[str, float]]], cycles: int, body_size: int, on_loop: bool = False
) -> str:
    how = (
        f" through `on_loop`, {SIDES} producers and {SIDES} consumers at once, each {cycles}"
        f" sends or claims and deletes of {BATCH}"
        if on_loop
        else f", {cycles} cycles of {BATCH}"
    )
    lines = [
        f"W1's cycle through the engine on PostgreSQL{how} a run, bodies of {body_size} bytes;"
        " CPU ms per 1,000 messages, medians of the runs (each run's load average after it):",
        "",
        "| code | this process | its backend | all PostgreSQL | msg/s | load averages |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, results in runs.items():

        def median(key: str, results: list[dict[str, float]] = results) -> float:
            return statistics.median(r[key] for r in results)

        loads = ", ".join(str(r["load"]) for r in results)
        lines.append(
            f"| {name} | {median('process_ms'):.0f} | {median('backend_ms'):.0f}"
            f" | {median('postgres_ms'):.0f} | {median('rate'):,.0f} | {loads} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="bench pg_cpu", description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cycles", type=int, default=600)
    ap.add_argument("--body-size", type=int, default=100, help="bytes in each message's body")
    ap.add_argument("--on-loop", action="store_true", help="the calls through on_loop, at once")
    ap.add_argument("--base", type=Path, help="another checkout, run alternately")
    ap.add_argument("--out", default="pg_cpu")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps((run_on_loop if args.on_loop else run_once)(args.cycles, args.body_size)))
        return 0
    variants = {"this": ROOT / "src"}
    if args.base is not None:
        variants["base"] = args.base.resolve() / "src"
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for _ in range(args.runs):
        for name, src in variants.items():
            argv = ["--cycles", str(args.cycles), "--body-size", str(args.body_size)]
            argv += ["--on-loop"] if args.on_loop else []
            runs[name].append(run_child(src, "pg_cpu", argv))
    report = markdown(runs, args.cycles, args.body_size, args.on_loop)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(runs, indent=2) + "\n")
    (RESULTS / f"{args.out}.md").write_text(report)
    print(report)
    return 0
