"""In-process engine throughput on each backend, beside the raw SQLite ceiling of this machine.

    ./dev bench engine [--runs 3] [--messages 3000] [--no-postgres]

For send, claim and delete at batch 1, 10 and 100, single sends from several threads at once
(what a busy server does, and where transactions share commits), dead-letter moves (claims
that move every message they find) and redrive, in operations (messages) per second; and, as
the ceiling, how
fast this machine's SQLite, with the same durability settings (WAL, synchronous=FULL), inserts
and deletes rows of the same size in transactions of the same batch. Reads of a message beside
concurrent sends show whether reads wait for the writers. Writes
bench/results/engine.json and bench/results/engine.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from deadletter.clock import ManualClock
from deadletter.domain.model import NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.redrive import TaskStatus
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store

RESULTS = Path(__file__).parent / "results"
POSTGRES = os.environ.get("DEADLETTER_BENCH_POSTGRES", "postgresql://127.0.0.1:5432/test")
BATCHES = (1, 10, 100)
SENDER_THREADS = 8
CONCURRENT_SEND = f"send x1, {SENDER_THREADS} threads"
MIXED_THREADS = 4
MIXED_READ = f"read x1, {MIXED_THREADS} threads beside {MIXED_THREADS} senders"
MIXED_SEND = f"send x1, {MIXED_THREADS} threads beside {MIXED_THREADS} readers"
# The ceiling a case is compared with, where it is not the case of the same name: concurrent
# single sends against serial single inserts, so a ratio above 1 shows commits being shared.
CEILING_OF = {CONCURRENT_SEND: "send x1"}
BODY = b"x" * 256
P = "bench"


@contextmanager
def store_url(backend: str) -> Iterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{tmp}/bench.db"
        return
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{POSTGRES}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def timed(n: int, work: Callable[[], None]) -> float:
    started = time.perf_counter()
    work()
    return n / (time.perf_counter() - started)


def engine_run(backend: str, messages: int) -> dict[str, float]:
    """One run of every engine case on a fresh store; operations per second by case."""
    out: dict[str, float] = {}
    with store_url(backend) as url:
        store = open_store(url)
        try:
            engine = Engine(store)
            for batch in BATCHES:
                n = messages if batch > 1 else messages // 5
                queue = f"q{batch}"
                engine.create_queue(P, queue)

                def send(queue: str = queue, batch: int = batch, n: int = n) -> None:
                    for _ in range(n // batch):
                        engine.send(P, queue, messages=[NewMessage(body=BODY)] * batch)

                out[f"send x{batch}"] = timed(n, send)
                held: list[tuple[str, str]] = []

                def claim(
                    queue: str = queue, batch: int = batch, held: list[tuple[str, str]] = held
                ) -> None:
                    while got := engine.claim(P, queue, limit=batch, ttl=3600).messages:
                        held.extend((m.id, got[0].claim_id or "") for m in got)

                out[f"claim x{batch}"] = timed(n, claim)

                def delete(
                    queue: str = queue, batch: int = batch, held: list[tuple[str, str]] = held
                ) -> None:
                    if batch == 1:
                        for mid, cid in held:
                            engine.delete_message(P, queue, message_id=mid, claim_id=cid)
                    else:
                        for start in range(0, len(held), batch):
                            engine.delete_messages(
                                P, queue, ids=[mid for mid, _ in held[start : start + batch]]
                            )

                out[f"delete x{batch}"] = timed(n, delete)
            out[CONCURRENT_SEND] = concurrent_send_run(engine, messages // 5)
            out.update(mixed_run(engine, messages // 5))
            out.update(dead_letter_run(store, messages))
        finally:
            store.close()
    return out


def concurrent_send_run(engine: Engine, n: int) -> float:
    """`n` single-message sends spread over SENDER_THREADS threads, as concurrent requests."""
    engine.create_queue(P, "concurrent")
    per_thread = n // SENDER_THREADS

    def sender() -> None:
        for _ in range(per_thread):
            engine.send(P, "concurrent", messages=[NewMessage(body=BODY)])

    def send_all() -> None:
        threads = [threading.Thread(target=sender) for _ in range(SENDER_THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    return timed(per_thread * SENDER_THREADS, send_all)


def mixed_run(engine: Engine, n: int) -> dict[str, float]:
    """Reads (a message by id, as GET of one message) in MIXED_THREADS threads while as many
    threads send single messages to the same queue: reads per second and sends per second."""
    engine.create_queue(P, "mixed")
    (probe,) = engine.send(P, "mixed", messages=[NewMessage(body=BODY)])
    per_thread = n // MIXED_THREADS

    ended: dict[str, list[float]] = {"send": [], "read": []}

    def sender() -> None:
        for _ in range(per_thread):
            engine.send(P, "mixed", messages=[NewMessage(body=BODY)])
        ended["send"].append(time.perf_counter())

    def reader() -> None:
        for _ in range(per_thread):
            engine.get_message(P, "mixed", message_id=probe.id)
        ended["read"].append(time.perf_counter())

    threads = [threading.Thread(target=work) for work in [sender, reader] * MIXED_THREADS]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = per_thread * MIXED_THREADS
    return {
        MIXED_READ: total / (max(ended["read"]) - started),
        MIXED_SEND: total / (max(ended["send"]) - started),
    }


def dead_letter_run(store: Store, messages: int) -> dict[str, float]:
    # A clock of its own: the claims of the first delivery lapse at once when it moves.
    clock = ManualClock(time.time())
    engine = Engine(store, clock)
    engine.create_queue(P, "dlq")
    policy = DeadLetterPolicy("dlq", max_claims=1)
    engine.create_queue(P, "src", settings=QueueSettings(dead_letter=policy))
    for _ in range(messages // 100):
        engine.send(P, "src", messages=[NewMessage(body=BODY)] * 100)
    # Deliver every message once and let the claims lapse: the next claim of each moves it
    # (a release would move them at once, in the release).
    while engine.claim(P, "src", limit=100, ttl=60).messages:
        pass
    clock.advance(61)

    def move() -> None:
        while engine.stats(P, "src").total:
            engine.claim(P, "src", limit=100, ttl=3600)

    moved = engine.stats(P, "src").total
    rates = {"dead-letter move x100": timed(moved, move)}
    task = engine.start_redrive(P, "dlq")

    def redrive() -> None:
        t = task
        while t.status is TaskStatus.RUNNING:
            t = engine.redrive_step(task.id, 500)

    rates["redrive x500"] = timed(moved, redrive)
    return rates


def ceiling_run(messages: int) -> dict[str, float]:
    """Raw SQLite: insert and delete rows like a message's in transactions of each batch."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(f"{tmp}/raw.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute(
            "CREATE TABLE m (id TEXT PRIMARY KEY, queue TEXT, seq INTEGER, body BLOB,"
            " attributes TEXT, expires_at REAL, visible_at REAL)"
        )
        conn.execute("CREATE INDEX m_seq ON m (queue, seq)")
        for batch in BATCHES:
            n = messages if batch > 1 else messages // 5
            ids = [str(uuid.uuid4()) for _ in range(n)]

            def insert(batch: int = batch, ids: list[str] = ids) -> None:
                for start in range(0, len(ids), batch):
                    conn.execute("BEGIN IMMEDIATE")
                    conn.executemany(
                        "INSERT INTO m VALUES (?, 'q', ?, ?, '{}', 0, 0)",
                        [(i, k, BODY) for k, i in enumerate(ids[start : start + batch])],
                    )
                    conn.execute("COMMIT")

            def delete(batch: int = batch, ids: list[str] = ids) -> None:
                for start in range(0, len(ids), batch):
                    conn.execute("BEGIN IMMEDIATE")
                    conn.executemany(
                        "DELETE FROM m WHERE id = ?", [(i,) for i in ids[start : start + batch]]
                    )
                    conn.execute("COMMIT")

            out[f"send x{batch}"] = timed(n, insert)
            out[f"delete x{batch}"] = timed(n, delete)
        conn.close()
    return out


def summary(runs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    return {
        case: {
            "median": statistics.median(r[case] for r in runs),
            "min": min(r[case] for r in runs),
            "max": max(r[case] for r in runs),
        }
        for case in runs[0]
    }


def markdown(report: dict[str, Any]) -> str:
    results = report["results"]
    ceiling = results["sqlite raw ceiling"]
    lines = [
        f"Engine benchmark ({report['cpus']} CPUs, Python {report['python']}, "
        f"{report['runs']} runs, {report['messages']} messages per batched case)",
        "",
        "Operations (messages) per second, median (min-max); the ratio is to the raw SQLite",
        "ceiling of the same batch (1.00 = as fast as bare inserts/deletes with the same fsyncs);",
        f"`{CONCURRENT_SEND}` is compared with serial single inserts: above 1, commits are shared.",
        "",
        "| case | " + " | ".join(name for name in results) + " | sqlite / ceiling |",
        "|---|" + "---:|" * (len(results) + 1),
    ]
    cases = list(dict.fromkeys(c for r in results.values() for c in r))
    for case in cases:
        cells = []
        for name in results:
            r = results[name].get(case)
            cells.append(f"{r['median']:,.0f} ({r['min']:,.0f}-{r['max']:,.0f})" if r else "")
        engine = results.get("sqlite", {}).get(case)
        raw = ceiling.get(CEILING_OF.get(case, case))
        ratio = f"{engine['median'] / raw['median']:.2f}" if engine and raw else ""
        lines.append(f"| {case} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench engine", description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args(argv)
    backends = ["sqlite"] if args.no_postgres else ["sqlite", "postgres"]
    results: dict[str, dict[str, dict[str, float]]] = {}
    for backend in backends:
        try:
            runs = [engine_run(backend, args.messages) for _ in range(args.runs)]
        except Exception as exc:  # PostgreSQL not reachable: say so and go on
            print(f"{backend}: not run ({exc})")
            continue
        results[backend] = summary(runs)
        print(f"{backend}: done", flush=True)
    results["sqlite raw ceiling"] = summary([ceiling_run(args.messages) for _ in range(args.runs)])
    report = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "runs": args.runs,
        "messages": args.messages,
        "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "engine.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / "engine.md").write_text(markdown(report))
    print(markdown(report))
    return 0
