"""What each message operation writes to the write-ahead log: on SQLite pages, by b-tree.

    ./dev bench wal [--preload 20000] [--cycles 300] [--base CHECKOUT] [--postgres]
                    [--out bench/results/wal]

On a fresh database, one process calls the engine: it sends PRELOAD messages (ten 1 KiB
messages a send), then runs CYCLES cycles of send ten, claim ten, delete them, each in its own
transaction, with the WAL's automatic checkpoint off so that every page a commit writes stays
in the WAL to be counted. Reports pages per operation (each page is 4 KiB written at the commit
and again when the WAL is checkpointed), which b-trees they belong to (`dbstat`), and the
process's CPU per cycle. `--postgres` also runs the cycles on a fresh PostgreSQL database and
reports the WAL bytes each operation adds (`pg_current_wal_insert_lsn`; the cluster's other
writers, if any, count too, and a page's first change after a checkpoint writes the whole
page), and the CPU a cycle costs the store's one backend (read from /proc where PostgreSQL runs
on this machine) and the process that runs the engine. `--base` runs the same with the code of
another checkout (its `src/`) in a process of its own. The counts do not depend on the
machine's load; the CPU does. Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sqlite3
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.child import run_child
from bench.proc import process_cpu_seconds

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).parent.parent
BODY = b'"' + b"x" * 1022 + b'"'  # 1 KiB of JSON
BATCH = 10
PAGE = 4096
FRAME = PAGE + 24  # a WAL frame: its header, then the page
WAL_HEADER = 32


def _wal_pages(wal: Path, first_frame: int) -> list[int]:
    """The page numbers of the WAL's frames from `first_frame` on."""
    pages = []
    with wal.open("rb") as fh:
        fh.seek(WAL_HEADER + first_frame * FRAME)
        while len(header := fh.read(24)) == 24:
            pages.append(struct.unpack(">I", header[:4])[0])
            fh.seek(PAGE, os.SEEK_CUR)
    return pages


Operation = tuple[str, Callable[[], object]]


def _operations(store: Any, preload: int) -> list[Operation]:
    """A queue on `store` holding `preload` messages, and the three operations of a cycle on
    it, by name: send ten, claim ten, delete the ten claimed last."""
    from deadletter.domain.model import NewMessage
    from deadletter.engine.engine import Engine

    engine = Engine(store)
    engine.create_queue("p", "q")

    def send() -> object:
        return engine.send(
            "p", "q", messages=[NewMessage(body=BODY, ttl=3600) for _ in range(BATCH)]
        )

    for _ in range(preload // BATCH):
        send()
    claimed: list[str] = []

    def claim() -> object:
        claimed[:] = [m.id for m in engine.claim("p", "q", limit=BATCH, ttl=60).messages]
        return claimed

    def delete() -> object:
        return engine.delete_messages("p", "q", ids=claimed)

    return [("send", send), ("claim", claim), ("delete", delete)]


def _per_operation(
    operations: list[Operation], cycles: int, written: Callable[[], float]
) -> dict[str, float]:
    """The mean growth of `written` (what the log holds so far) across each operation."""
    totals = dict.fromkeys((name for name, _ in operations), 0.0)
    for _ in range(cycles):
        for name, operation in operations:
            start = written()
            operation()
            totals[name] += written() - start
    return {name: total / cycles for name, total in totals.items()}


def run_once(preload: int, cycles: int) -> dict[str, Any]:
    """One run in this process, with whatever `deadletter` is on the path."""
    from deadletter.storage.sqlite.backend import SQLiteStore

    folder = Path(tempfile.mkdtemp(prefix="deadletter-wal-"))
    path = folder / "wal.db"
    store = SQLiteStore(str(path))
    store._conn.execute("PRAGMA wal_autocheckpoint = 0")
    operations = _operations(store, preload)
    store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = Path(f"{path}-wal")

    def frames() -> float:
        return wal.stat().st_size // FRAME

    cpu = time.process_time()
    pages = _per_operation(operations, cycles, frames)
    cpu = time.process_time() - cpu
    # Which b-tree each page of one more cycle belongs to.
    names = dict(
        (page, name)
        for name, page in sqlite3.connect(path).execute("SELECT name, pageno FROM dbstat")
    )
    by_tree: dict[str, dict[str, int]] = {}
    for name, operation in operations:
        start = int(frames())
        operation()
        trees = collections.Counter(
            names.get(page, "(free list)") for page in _wal_pages(wal, start)
        )
        by_tree[name] = dict(trees.most_common())
    store.close()
    return {
        "pages": pages,
        "by_tree": by_tree,
        "cpu_us_per_cycle": round(cpu / cycles * 1e6),
    }


def run_postgres(preload: int, cycles: int) -> tuple[dict[str, float], dict[str, float]]:
    """Mean WAL KiB per send, claim and delete on a fresh PostgreSQL database; and the CPU
    ms per cycle of the store's one connection's backend (when PostgreSQL runs on this
    machine) and of this process."""
    import psycopg

    from bench.layers_bench import Database
    from bench.peers.systems import POSTGRES_ADMIN
    from deadletter.storage.postgres.backend import PostgresStore

    db = Database("postgres", Path(tempfile.gettempdir()))
    store = PostgresStore(db.url, pool_size=1)  # one connection: its backend does the cycles
    try:
        operations = _operations(store, preload)
        with store._pool.connection() as own:
            backend = int(own.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"])
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute("CHECKPOINT")  # every run starts its first changes alike

            def written() -> float:
                sql = "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')"
                return float(conn.execute(sql).fetchone()[0])

            backend_cpu, own_cpu = _cpu_seconds(backend), time.process_time()
            wal_bytes = _per_operation(operations, cycles, written)
            backend_cpu, own_cpu = (
                _cpu_seconds(backend) - backend_cpu,
                time.process_time() - own_cpu,
            )
        cpu = {"process_ms_per_cycle": round(own_cpu / cycles * 1000, 2)}
        if backend_cpu >= 0:
            cpu["backend_ms_per_cycle"] = round(backend_cpu / cycles * 1000, 2)
        return {name: round(n / 1024, 1) for name, n in wal_bytes.items()}, cpu
    finally:
        store.close()
        db.close()


def _cpu_seconds(pid: int) -> float:
    """User and system CPU of process `pid` so far (-inf where it is not on this machine)."""
    try:
        return process_cpu_seconds(pid)
    except OSError:
        return float("-inf")


def run_variant(src: Path, args: argparse.Namespace) -> dict[str, Any]:
    argv = ["--preload", str(args.preload), "--cycles", str(args.cycles)]
    return run_child(src, "wal", [*argv, *(["--postgres"] if args.postgres else [])])


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"SQLite WAL pages per operation ({BATCH} messages of 1 KiB each; {report['preload']:,}"
        f" messages sent first; mean of {report['cycles']} cycles; each in its own commit).",
        "",
        "| code | send | claim | delete | a cycle | CPU per cycle (µs) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, result in report["variants"].items():
        pages = result["pages"]
        lines.append(
            f"| {name} | {pages['send']:.1f} | {pages['claim']:.1f} | {pages['delete']:.1f}"
            f" | {sum(pages.values()):.1f} | {result['cpu_us_per_cycle']:,} |"
        )
    variants = report["variants"].items()
    on_postgres = {n: r["postgres_kib"] for n, r in variants if "postgres_kib" in r}
    if on_postgres:
        lines += [
            "",
            "PostgreSQL, WAL KiB per operation (the same cycles on a fresh database):",
            "",
            "| code | send | claim | delete | a cycle |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, kib in on_postgres.items():
            lines.append(
                f"| {name} | {kib['send']} | {kib['claim']} | {kib['delete']}"
                f" | {round(sum(kib.values()), 1)} |"
            )
        lines += [
            "",
            "PostgreSQL, CPU ms per cycle: the store's one backend (its connection's server"
            " process), and the process that runs the engine and psycopg:",
            "",
            "| code | backend | engine and driver |",
            "|---|---:|---:|",
        ]
        for name, result in variants:
            cpu = result.get("postgres_cpu", {})
            if cpu:
                lines.append(
                    f"| {name} | {cpu.get('backend_ms_per_cycle', '—')}"
                    f" | {cpu['process_ms_per_cycle']} |"
                )
    lines += ["", "The pages of one more cycle, by b-tree:", ""]
    for name, result in report["variants"].items():
        for operation, trees in result["by_tree"].items():
            spelled = ", ".join(f"{tree} {n}" for tree, n in trees.items())
            lines.append(f"- {name}, {operation}: {spelled}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./dev bench wal", description=__doc__.split("\n")[0])
    ap.add_argument("--preload", type=int, default=20_000)
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--base", help="a checkout whose src/ is run beside this one")
    ap.add_argument("--postgres", action="store_true", help="also on PostgreSQL: WAL bytes")
    ap.add_argument("--out", default=str(RESULTS / "wal"))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        result = run_once(args.preload, args.cycles)
        if args.postgres:
            result["postgres_kib"], result["postgres_cpu"] = run_postgres(args.preload, args.cycles)
        print(json.dumps(result))
        return 0
    variants = {"this": ROOT / "src"}
    if args.base:
        variants["base"] = Path(args.base).resolve() / "src"
    report: dict[str, Any] = {
        "preload": args.preload,
        "cycles": args.cycles,
        "variants": {name: run_variant(src, args) for name, src in variants.items()},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))
    return 0
