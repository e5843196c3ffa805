"""What one operation costs as a queue grows: claim, delete, list and stats at each depth.

    ./dev bench depth [--max-depth 100000] [--reps 20] [--stores sqlite,postgres]

For depths 10^2 .. --max-depth on each store, the milliseconds (median of --reps) of one
claim of 10, one delete of 10 ids, one listing of 10 and one stats call, in three shapes of
queue: `free` (every message visible), `busy head` (the older half of the queue claimed or
delayed, the newer half free) and `dlq` (a dead-letter queue of that many dead letters); in
the `dlq` shape also a listing of 10 dead letters filtered by a source queue whose ten dead
letters arrived last, behind all the others.
A queue is filled with direct batched inserts through the store, then kept at its depth
by sending 10 (untimed) before each claim+delete. Writes bench/results/depth.{json,md}.

--explain: on PostgreSQL at the deepest queue, one more round of the operations in which every
statement is first run as `EXPLAIN (ANALYZE, BUFFERS)` with its values inside a savepoint
rolled back, written to bench/results/<out>-plans.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from bench.engine_bench import BODY, P, store_url
from deadletter.domain.model import (
    DeadLetterFilter,
    ListQuery,
    Message,
    NewMessage,
    Queue,
    QueueSettings,
)
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.provenance import Reason
from deadletter.engine import transitions
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store
from deadletter.storage.sql.executor import Executor

RESULTS = Path(__file__).parent / "results"
FILL_BATCH = 5000
HOUR = 3600
DAY = 86400
SHAPES = ("free", "busy head", "dlq")
OPERATIONS = ("claim 10", "delete 10", "list 10", "stats", "list 10 of a source")


def fill(store: Store, queue: Queue, n: int, shape: str, source: Queue | None = None) -> None:
    """Insert `n` messages at the tail of `queue` in large transactions; in the `busy head`
    shape a quarter claimed and a quarter delayed (call it first, on an empty queue)."""
    now = time.time()
    made = 0
    while made < n:
        batch: list[Message] = []
        for _ in range(min(FILL_BATCH, n - made)):
            i = made + len(batch)
            delay = HOUR if shape == "busy head" and n // 4 <= i < n // 2 else 0
            m = transitions.enqueued(
                NewMessage(body=BODY),
                message_id=uuid.uuid4().hex,
                queue=queue.name,
                now=now,
                ttl=DAY,
                delay=delay,
                eligible=True,
                client_id=None,
            )
            if shape == "busy head" and i < n // 4:
                m = transitions.claimed(
                    m, claim_id=uuid.uuid4().hex, now=now, expires=now + HOUR, grace=60
                )
            if shape == "dlq" and source is not None:
                m = transitions.dead_lettered(
                    m, source=source, dlq=queue, reason=Reason.MAX_CLAIMS, now=now
                )
            batch.append(m)
        with store.transaction() as tx:
            tx.insert_messages(queue.project, batch)
        made += len(batch)


def analyze(backend: str, url: str) -> None:
    """Give PostgreSQL's planner the statistics autovacuum would gather after a bulk load;
    without them it plans lookups by id and expiry as walks of the queue."""
    if backend == "postgres":
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def measure(engine: Engine, queue: str, reps: int, source: str | None = None) -> dict[str, float]:
    """Median milliseconds of each operation on `queue`, whose depth stays as it was; the
    listing of `source`'s dead letters only where one is given."""
    times: dict[str, list[float]] = {op: [] for op in OPERATIONS}
    where = DeadLetterFilter(source_queue=source)

    def timed(op: str, work: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        out = work()
        times[op].append(time.perf_counter() - started)
        return out

    for _ in range(reps):
        engine.send(P, queue, messages=[NewMessage(body=BODY)] * 10)
        claim = timed("claim 10", lambda: engine.claim(P, queue, limit=10, ttl=HOUR))
        ids = [m.id for m in claim.messages]
        timed("delete 10", lambda ids=ids: engine.delete_messages(P, queue, ids=ids))
        timed("list 10", lambda: engine.list_messages(P, queue, query=ListQuery(limit=10)))
        timed("stats", lambda: engine.stats(P, queue))
        if source is not None:
            timed(
                "list 10 of a source",
                lambda: engine.list_dead_letters(P, queue, where=where, after_seq=0, limit=10),
            )
    return {op: median_ms(samples) for op, samples in times.items() if samples}


@contextmanager
def explained(plans: list[str]) -> Iterator[None]:
    """Run every statement of the store first as EXPLAIN (ANALYZE, BUFFERS), rolled back, and
    append its plans to `plans`; statements sent in a pipeline are run as they are."""
    plain = Executor.run

    def run(self: Executor, sql: str, params: Mapping[str, Any] | None = None) -> int:
        cur: Any = self.cur
        conn = getattr(cur, "connection", None)
        if isinstance(conn, psycopg.Connection) and not conn.pgconn.pipeline_status:
            statement = self.d.compile(sql)
            bound = self.d.bind(statement, params or {})
            text = " ".join(statement.text.split())
            plans.append(f"### {text[:160]}{'...' if len(text) > 160 else ''}\n")
            cur.execute("SAVEPOINT explained")
            cur.execute(f"EXPLAIN (ANALYZE, BUFFERS) {statement.text}", bound)
            lines = [next(iter(r.values())) if isinstance(r, dict) else r[0] for r in cur]
            cur.execute("ROLLBACK TO SAVEPOINT explained")
            plans.append("```\n" + "\n".join(lines) + "\n```\n")
        return plain(self, sql, params)

    Executor.run = run  # type: ignore[method-assign]
    try:
        yield
    finally:
        Executor.run = plain  # type: ignore[method-assign]


def explain_round(engine: Engine, queue: str, shape: str, depth: int) -> list[str]:
    """The plans of one claim, delete, listing and stats on `queue`."""
    out = [f"## {shape}, {depth:,} messages\n"]
    engine.send(P, queue, messages=[NewMessage(body=BODY)] * 10)
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("claim 10", lambda: engine.claim(P, queue, limit=10, ttl=HOUR)),
        ("list 10", lambda: engine.list_messages(P, queue, query=ListQuery(limit=10))),
        ("stats", lambda: engine.stats(P, queue)),
    ]
    for op, work in steps:
        out.append(f"## {op} ({shape}, {depth:,})\n")
        with explained(out):
            got = work()
        if op == "claim 10":
            ids = [m.id for m in got.messages]
            out.append(f"## delete 10 ({shape}, {depth:,})\n")
            with explained(out):
                engine.delete_messages(P, queue, ids=ids)
    return out


def depths(max_depth: int) -> list[int]:
    return [10**k for k in range(2, 8) if 10**k <= max_depth]


def backend_run(
    backend: str, max_depth: int, reps: int, plans: list[str] | None = None
) -> list[dict[str, Any]]:
    """The rows of one store; with `plans`, PostgreSQL's plans at the deepest queue in it."""
    rows: list[dict[str, Any]] = []
    with store_url(backend) as url:
        store = open_store(url)
        try:
            engine = Engine(store)
            free = engine.create_queue(P, "free")
            dlq = engine.create_queue(P, "dlq")
            source = engine.create_queue(
                P,
                "source",
                settings=QueueSettings(dead_letter=DeadLetterPolicy("dlq", max_claims=3)),
            )
            depth = 0
            depth_max = depths(max_depth)[-1]
            for target in depths(max_depth):
                fill(store, free, target - depth, "free")
                fill(store, dlq, target - depth, "dlq", source)
                depth = target
                rare = engine.create_queue(P, f"rare{target}", settings=source.settings)
                fill(store, dlq, 10, "dlq", rare)
                busy = engine.create_queue(P, f"busy{target}")
                fill(store, busy, target, "busy head")
                analyze(backend, url)
                for shape, name in (("free", "free"), ("busy head", busy.name), ("dlq", "dlq")):
                    ms = measure(engine, name, reps, rare.name if shape == "dlq" else None)
                    rows.append({"store": backend, "shape": shape, "depth": target, **ms})
                    print(f"{backend} {shape:9} {target:>9,}: " + _cells(ms), flush=True)
                    if plans is not None and backend == "postgres" and target == depth_max:
                        plans += explain_round(engine, name, shape, target)
                engine.delete_queue(P, busy.name)
        finally:
            store.close()
    return rows


def _cells(ms: dict[str, float]) -> str:
    return "  ".join(f"{op} {ms[op]:7.2f}" for op in OPERATIONS if op in ms)


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Depth benchmark ({report['cpus']} CPUs, Python {report['python']}, median of "
        f"{report['reps']} operations): milliseconds per operation by queue depth",
        "",
        "| store | shape | depth | " + " | ".join(OPERATIONS) + " |",
        "|---|---|---:|" + "---:|" * len(OPERATIONS),
    ]
    for r in report["rows"]:
        cells = " | ".join(f"{r[op]:.2f}" if op in r else "-" for op in OPERATIONS)
        lines.append(f"| {r['store']} | {r['shape']} | {r['depth']:,} | {cells} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench depth", description=__doc__)
    parser.add_argument("--max-depth", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--no-postgres", action="store_true", help="as --stores sqlite")
    parser.add_argument("--stores", default="sqlite,postgres", help="comma-separated stores")
    parser.add_argument("--out", default="depth", help="name of the result files")
    parser.add_argument(
        "--explain", action="store_true", help="PostgreSQL's plans at the deepest queue"
    )
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    plans: list[str] | None = [] if args.explain else None
    stores = [s for s in args.stores.split(",") if s in ("sqlite", "postgres")]
    for backend in [s for s in stores if s == "sqlite"] if args.no_postgres else stores:
        try:
            rows += backend_run(backend, args.max_depth, args.reps, plans)
        except Exception as exc:  # PostgreSQL not reachable: say so and go on
            print(f"{backend}: not run ({exc!r})")
    report = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "reps": args.reps,
        "rows": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(report))
    if plans:
        (RESULTS / f"{args.out}-plans.md").write_text(
            "PostgreSQL's plans of each statement of each operation (`./dev bench depth "
            "--explain`), on the store's own session\n\n" + "\n".join(plans)
        )
    print(markdown(report))
    return 0
