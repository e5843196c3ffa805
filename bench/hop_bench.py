"""What a request's hop to a worker thread costs, against what psycopg's async driver would.

    ./dev bench hop [--calls 20000] [--statements 5000] [--postgres URL]

The faces run a request's engine call on a worker thread (`api.threads.in_thread`) where the
store cannot run it on the event loop (always on PostgreSQL). This measures, in this process,
the CPU of `in_thread` for a call that returns at once, one call at a time and eight at once;
and the CPU of one round trip (`SELECT 1`) through psycopg's `Connection` and through its
`AsyncConnection` on an event loop, which is what a store that waits on the loop instead of a
thread would pay on each of a request's statements. CPU is this process's (`process_time`),
so the figures grow with the machine's load; compare the rows of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from bench.peers.systems import POSTGRES_ADMIN

WARM_UP = 300
AT_ONCE = 8


def hops(calls: int) -> dict[str, float]:
    """µs of CPU per `in_thread` call, one at a time and AT_ONCE at a time."""
    from deadletter.api.threads import in_thread

    def nothing() -> int:
        return 1

    async def run() -> dict[str, float]:
        for _ in range(WARM_UP):
            await in_thread(nothing)
        out = {}
        for name, width in (("hop, one at a time", 1), (f"hop, {AT_ONCE} at once", AT_ONCE)):
            start = time.process_time()
            for _ in range(calls // width):
                await asyncio.gather(*(in_thread(nothing) for _ in range(width)))
            out[name] = (time.process_time() - start) / calls * 1e6
        return out

    return asyncio.run(run())


def round_trips(url: str, statements: int) -> dict[str, float]:
    """µs of CPU per `SELECT 1` through psycopg's sync and async connections."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(WARM_UP):
            conn.execute("SELECT 1").fetchone()
        start = time.process_time()
        for _ in range(statements):
            conn.execute("SELECT 1").fetchone()
        sync = (time.process_time() - start) / statements * 1e6

    async def run() -> float:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            for _ in range(WARM_UP):
                await (await conn.execute("SELECT 1")).fetchone()
            start = time.process_time()
            for _ in range(statements):
                await (await conn.execute("SELECT 1")).fetchone()
            return (time.process_time() - start) / statements * 1e6

    return {"round trip, Connection": sync, "round trip, AsyncConnection": asyncio.run(run())}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./dev bench hop", description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--statements", type=int, default=5_000)
    ap.add_argument("--postgres", default=POSTGRES_ADMIN, help="database URL")
    args = ap.parse_args(argv)
    figures = {**hops(args.calls), **round_trips(args.postgres, args.statements)}
    print("| what | CPU µs each |\n|---|---:|")
    for name, us in figures.items():
        print(f"| {name} | {us:.1f} |")
    return 0
