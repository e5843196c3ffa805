"""The server's CPU per request, layer by layer: what the engine costs, what the app adds, what
HTTP adds.

    ./dev bench layers [--stores sqlite,postgres] [--cycles 400] [--runs 3]

The same Zaqar cycle (send ten 1 KiB messages, claim them, delete them by ids, as the faces
bench's client does), and the cycle of a consumer that acknowledges with its next claim (send
ten, then one claim that acknowledges the batch before: *claim+ack*; docs/api.md), are measured
at four depths, one after the other within each run, each
on a fresh database of its own:

- *engine, no sync*: `Engine.send`, `claim` and `delete_messages` called in this process,
  with the store's commits not waiting for the disk (SQLite `synchronous = OFF`,
  PostgreSQL `synchronous_commit = off`). A measurement only, never how deadletter runs: the
  difference to the next line is what durability costs.
- *engine*: the same calls, durable, as the server makes them.
- *app*: the ASGI app (`build_app`, middleware, the hot routes, the Zaqar handlers, the hop to a
  worker thread) called in this process with the requests the client sends, no socket.
- *http*: a `deadletter serve` on the same store, over one keep-alive connection
  (`faces_bench`); its CPU is every thread of the server across the request.

CPU is user + system time of every thread (`time.process_time` in this process,
`/proc/PID/task/*/schedstat` for the server), per request, mean over the cycles. The in-process
layers include the few microseconds of their own driver (building the request, reading the
answer's ids). Differences between lines are what each layer adds. Writes
bench/results/layers.json and layers.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.faces_bench import (
    BATCH,
    BODY,
    ZAQAR_HEADERS,
    ZaqarFace,
    claim_of,
    server_cpu_ns,
    write_results,
)
from bench.peers.systems import POSTGRES_ADMIN, Deadletter

RESULTS = Path(__file__).parent / "results"
OPERATIONS = ("send", "claim", "delete", "claim+ack")
LAYERS = ("engine, no sync", "engine", "app", "http")
QUEUE = "layers"
PROJECT = "bench"


class Database:
    """A fresh database of `store`'s kind, dropped at `close`."""

    def __init__(self, store: str, folder: Path) -> None:
        self.store = store
        self.name = f"bench_{uuid.uuid4().hex[:10]}"
        if store == "sqlite":
            folder.mkdir(parents=True, exist_ok=True)
            self.file = folder / f"{self.name}.db"
            self.url = f"sqlite:///{self.file}"
            return
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        self.url = POSTGRES_ADMIN.rsplit("/", 1)[0] + "/" + self.name

    def close(self) -> None:
        if self.store == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.file}{suffix}").unlink(missing_ok=True)
            return
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def _without_sync(store: Any, db: Database) -> None:
    """Commits that do not wait for the disk, for the *engine, no sync* line only."""
    if db.store == "sqlite":  # the store writes through its one connection
        store._conn.execute("PRAGMA synchronous = OFF")
        return
    import psycopg

    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:  # sessions opened after
        conn.execute(f'ALTER DATABASE "{db.name}" SET synchronous_commit = off')


def engine_cycle(db: Database, durable: bool) -> Callable[[], dict[str, float]]:
    from deadletter.domain.model import NewMessage
    from deadletter.engine.engine import Engine
    from deadletter.storage import open_store

    if not durable and db.store == "postgres":
        _without_sync(None, db)
    store = open_store(db.url)
    if not durable and db.store == "sqlite":
        _without_sync(store, db)
    engine = Engine(store)
    engine.create_queue(PROJECT, QUEUE)
    body = BODY.encode()

    held: list[Any] = [None, ()]  # the claim id and ids the next claim acknowledges

    def cycle() -> dict[str, float]:
        t0 = time.process_time()
        engine.send(PROJECT, QUEUE, [NewMessage(body, ttl=3600) for _ in range(BATCH)])
        t1 = time.process_time()
        claim = engine.claim(PROJECT, QUEUE, BATCH, ttl=300, grace=60)
        t2 = time.process_time()
        engine.delete_messages(PROJECT, QUEUE, [m.id for m in claim.messages])
        t3 = time.process_time()
        engine.send(PROJECT, QUEUE, [NewMessage(body, ttl=3600) for _ in range(BATCH)])
        t4 = time.process_time()
        _, claim = engine.acknowledge_and_claim(PROJECT, QUEUE, held[0], held[1], BATCH, 300, 60)
        t5 = time.process_time()
        held[:] = [claim.id, [m.id for m in claim.messages]]
        return {"send": t1 - t0, "claim": t2 - t1, "delete": t3 - t2, "claim+ack": t5 - t4}

    cycle.close = store.close  # type: ignore[attr-defined]
    return cycle


def acknowledging(held: tuple[str, list[str]] | None) -> bytes:
    """A claim's body that acknowledges `held` (claim id, ids), if any."""
    body: dict[str, Any] = {"ttl": 300, "grace": 60}
    if held is not None:
        body["acknowledge"] = {"claim_id": held[0], "ids": held[1]}
    return json.dumps(body).encode()


class InProcessApp:
    """The app of `deadletter serve`, called as uvicorn calls it, without a socket."""

    def __init__(self, url: str) -> None:
        from deadletter.api.app import AppOptions, Limits, build_app
        from deadletter.engine.engine import Engine
        from deadletter.storage import open_store

        self.store = open_store(url)
        limits = Limits(zaqar_body=1 << 20, sqs_body=1 << 20)
        self.app = build_app(Engine(self.store), AppOptions(), background=[], limits=limits)
        self.headers = [(k.lower().encode(), v.encode()) for k, v in ZAQAR_HEADERS.items()]
        self.messages = json.dumps({"messages": [{"body": BODY, "ttl": 3600}] * BATCH}).encode()
        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(self.request("PUT", f"/v2/queues/{QUEUE}", b"{}"))
        self.held: tuple[str, list[str]] | None = None

    async def request(self, method: str, path: str, body: bytes = b"", query: str = "") -> bytes:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [*self.headers, (b"content-length", str(len(body)).encode())],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8888),
            "state": {},
        }
        messages: list[dict[str, Any]] = []
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if delivered:  # nothing more comes: as a client that waits for the answer
                await asyncio.Event().wait()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            messages.append(message)

        await self.app(scope, receive, send)
        status = messages[0]["status"]
        answer = b"".join(m.get("body", b"") for m in messages[1:])
        if status >= 300:
            raise RuntimeError(f"{method} {path} -> {status}: {answer[:200]!r}")
        return answer

    def cycle(self) -> dict[str, float]:
        run: Callable[[Awaitable[bytes]], bytes] = self.loop.run_until_complete
        t0 = time.process_time()
        run(self.request("POST", f"/v2/queues/{QUEUE}/messages", self.messages))
        t1 = time.process_time()
        claim = b'{"ttl": 300, "grace": 60}'
        answer = run(self.request("POST", f"/v2/queues/{QUEUE}/claims", claim, f"limit={BATCH}"))
        t2 = time.process_time()
        claim_id, ids = claim_of(answer)
        query = f"ids={','.join(ids)}&claim_ids={claim_id}"
        t3 = time.process_time()
        run(self.request("DELETE", f"/v2/queues/{QUEUE}/messages", b"", query))
        t4 = time.process_time()
        run(self.request("POST", f"/v2/queues/{QUEUE}/messages", self.messages))
        body = acknowledging(self.held)
        t5 = time.process_time()
        answer = run(self.request("POST", f"/v2/queues/{QUEUE}/claims", body, f"limit={BATCH}"))
        t6 = time.process_time()
        self.held = claim_of(answer)
        return {"send": t1 - t0, "claim": t2 - t1, "delete": t4 - t3, "claim+ack": t6 - t5}

    def close(self) -> None:
        self.loop.close()
        self.store.close()


def http_cycle(store: str) -> tuple[Callable[[], dict[str, float]], Deadletter]:
    system = Deadletter("zaqar", store)
    system.fresh()
    assert system.proc is not None
    pid = system.proc.popen.pid
    port = int(system.proc.popen.args[system.proc.popen.args.index("--port") + 1])
    face = ZaqarFace(port)
    held: list[tuple[str, list[str]] | None] = [None]
    claims = f"/v2/queues/faces-zaqar/claims?limit={BATCH}"

    def cycle() -> dict[str, float]:
        t0 = server_cpu_ns(pid)
        face.send()
        t1 = server_cpu_ns(pid)
        path = face.receive()
        t2 = server_cpu_ns(pid)
        face.delete(path)
        t3 = server_cpu_ns(pid)
        face.send()
        body = acknowledging(held[0])
        t4 = server_cpu_ns(pid)
        answer = face.conn.request("POST", claims, body, ZAQAR_HEADERS)
        t5 = server_cpu_ns(pid)
        held[0] = claim_of(answer)
        spent = {"send": t1 - t0, "claim": t2 - t1, "delete": t3 - t2, "claim+ack": t5 - t4}
        return {op: ns / 1e9 for op, ns in spent.items()}

    return cycle, system


def measure(cycle: Callable[[], dict[str, float]], cycles: int) -> dict[str, float]:
    """Mean ms per request of each operation, after a warm-up of a tenth of the cycles."""
    for _ in range(max(cycles // 10, 10)):
        cycle()
    spent: dict[str, list[float]] = {op: [] for op in OPERATIONS}
    for _ in range(cycles):
        for op, seconds in cycle().items():
            spent[op].append(seconds)
    return {op: statistics.fmean(s) * 1000 for op, s in spent.items()}


def run(store: str, cycles: int, folder: Path) -> dict[str, dict[str, float]]:
    """{layer: {operation: ms}} of one run on `store`."""
    out: dict[str, dict[str, float]] = {}
    for layer in LAYERS:
        if layer == "http":
            cycle, system = http_cycle(store)
            try:
                out[layer] = measure(cycle, cycles)
            finally:
                system.stop()
            continue
        db = Database(store, folder)
        try:
            if layer == "app":
                app = InProcessApp(db.url)
                try:
                    out[layer] = measure(app.cycle, cycles)
                finally:
                    app.close()
            else:
                engine = engine_cycle(db, durable=layer == "engine")
                try:
                    out[layer] = measure(engine, cycles)
                finally:
                    engine.close()  # type: ignore[attr-defined]
        finally:
            db.close()
    return out


def render(results: dict[str, list[dict[str, dict[str, float]]]]) -> str:
    lines = [
        f"CPU ms per request of {BATCH} messages, median of the runs (min-max); a cycle is a"
        " send, a claim and a delete; *adds* is the median of this layer's cycle less the"
        " layer above it; *claim+ack* is a claim that acknowledges the batch before.",
        "",
        "| store | layer | send | claim | delete | claim+ack | cycle | adds"
        " | (claim + delete) / send | claim+ack / send |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for store, runs in results.items():
        previous: float | None = None
        for layer in LAYERS:
            cells = []
            for op in (*OPERATIONS, "cycle"):
                values = [_cycle(r[layer]) if op == "cycle" else r[layer][op] for r in runs]
                cells.append((statistics.median(values), min(values), max(values)))
            cycle = cells[-1][0]
            adds = "" if previous is None else f"{cycle - previous:+.3f}"
            previous = cycle
            ratio = (cells[1][0] + cells[2][0]) / cells[0][0]
            acked = cells[3][0] / cells[0][0]
            row = [store, layer, *(f"{m:.3f} ({lo:.3f}-{hi:.3f})" for m, lo, hi in cells)]
            lines.append("| " + " | ".join([*row, adds, f"{ratio:.2f}", f"{acked:.2f}"]) + " |")
    return "\n".join(lines) + "\n"


def _cycle(ms: dict[str, float]) -> float:
    """The standard cycle: a send, a claim and a delete."""
    return ms["send"] + ms["claim"] + ms["delete"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench layers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgres", help="comma-separated stores")
    parser.add_argument("--cycles", type=int, default=400, help="cycles per layer and run")
    parser.add_argument("--runs", type=int, default=3, help="runs per store")
    parser.add_argument("--out", default=str(RESULTS / "layers"), help="results path, no suffix")
    args = parser.parse_args(argv)
    folder = Path(__file__).parent / "work" / "layers"
    results: dict[str, list[dict[str, dict[str, float]]]] = {}
    for store in args.stores.split(","):
        results[store] = []
        for i in range(args.runs):
            result = run(store, args.cycles, folder)
            results[store].append(result)
            figures = {
                layer: {op: round(ms, 3) for op, ms in r.items()} for layer, r in result.items()
            }
            print(f"{store} run {i + 1}: {figures}", flush=True)
    table = render(results)
    doc = {"cycles": args.cycles, "batch": BATCH, "results": results}
    write_results(Path(args.out), doc, table)
    print(table)
    return 0
