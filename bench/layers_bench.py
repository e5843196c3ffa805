"""The server's CPU per request, layer by layer: what the engine costs, what the app adds, what
HTTP adds.

    ./dev bench layers [--stores sqlite,postgres] [--faces zaqar,sqs] [--cycles 400] [--runs 3]

The same Zaqar cycle (send ten 1 KiB messages, claim them, delete them by ids, as the faces
bench's client does), and the cycle of a consumer that acknowledges with its next claim (send
ten, then one claim that acknowledges the batch before: *claim+ack*; docs/api.md), are measured
at four depths, one after the other within each run, each
on a fresh database of its own. The SQS face's cycle is a boto3 consumer's (SendMessageBatch
of ten 1 KiB messages, ReceiveMessage of ten with a visibility timeout, DeleteMessageBatch of
their receipts: *send*, *claim*, *delete*), measured at the same depths but the first:

- *engine, no sync*: `Engine.send`, `claim` and `delete_messages` called in this process,
  with the store's commits not waiting for the disk (SQLite `synchronous = OFF`,
  PostgreSQL `synchronous_commit = off`). A measurement only, never how deadletter runs: the
  difference to the next line is what durability costs.
- *engine*: the same calls, durable, as the server makes them (for SQS, those its face makes:
  `send_each`, `claim`, `acknowledge`).
- *app*: the ASGI app (`build_app`, middleware, the hot routes, the face's handlers, the hop
  to a worker thread) called in this process with the requests the client sends, no socket;
  for SQS, boto3's own requests (headers, signature, body), captured once through the app.
- *http*: a `deadletter serve` on the same store, over one keep-alive connection
  (`faces_bench`, which replays boto3's requests for SQS); its CPU is every thread of the
  server across the request.

CPU is user + system time of every thread (`time.process_time` in this process,
`/proc/PID/task/*/schedstat` for the server), per request, mean over the cycles. The in-process
layers include the few microseconds of their own driver (building the request, reading the
answer's ids). Differences between lines of a face are what each layer adds. Writes
bench/results/layers.json and layers.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.faces_bench import (
    BATCH,
    BODY,
    ZAQAR_HEADERS,
    SqsFace,
    ZaqarFace,
    boto3_cycle,
    claim_of,
    delete_batch,
    server_cpu_ns,
    write_results,
)
from bench.peers.systems import POSTGRES_ADMIN, Deadletter

RESULTS = Path(__file__).parent / "results"
OPERATIONS = ("send", "claim", "delete", "claim+ack")
# The layers measured on each face, outermost last.
LAYERS = {
    "zaqar": ("engine, no sync", "engine", "app", "http"),
    "sqs": ("engine", "app", "http"),
}
# The layers as `--layers` names them.
SHORT = {"nosync": "engine, no sync", "engine": "engine", "app": "app", "http": "http"}
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


def engine_cycle(db: Database, durable: bool, face: str) -> Callable[[], dict[str, float]]:
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

    def zaqar() -> dict[str, float]:
        t0 = time.process_time()
        engine.send(PROJECT, QUEUE, messages=[NewMessage(body, ttl=3600) for _ in range(BATCH)])
        t1 = time.process_time()
        claim = engine.claim(PROJECT, QUEUE, limit=BATCH, ttl=300, grace=60)
        t2 = time.process_time()
        engine.delete_messages(PROJECT, QUEUE, ids=[m.id for m in claim.messages])
        t3 = time.process_time()
        engine.send(PROJECT, QUEUE, messages=[NewMessage(body, ttl=3600) for _ in range(BATCH)])
        t4 = time.process_time()
        _, claim = engine.acknowledge_and_claim(
            PROJECT, QUEUE, done_claim=held[0], done=held[1], limit=BATCH, ttl=300, grace=60
        )
        t5 = time.process_time()
        held[:] = [claim.id, [m.id for m in claim.messages]]
        return {"send": t1 - t0, "claim": t2 - t1, "delete": t3 - t2, "claim+ack": t5 - t4}

    # The SQS face's send (code older than `send_each` sent a batch with `send_prepared`).
    send_each = getattr(engine, "send_each", engine.send_prepared)

    def sqs() -> dict[str, float]:
        t0 = time.process_time()
        send_each(PROJECT, QUEUE, prepare=lambda _: [NewMessage(body) for _ in range(BATCH)])
        t1 = time.process_time()
        claim = engine.claim(PROJECT, QUEUE, limit=BATCH, ttl=300)
        t2 = time.process_time()
        receipts = [(m.id, claim.id, None) for m in claim.messages]
        t3 = time.process_time()
        engine.acknowledge(PROJECT, QUEUE, held=receipts, strict=False)
        t4 = time.process_time()
        return {"send": t1 - t0, "claim": t2 - t1, "delete": t4 - t3}

    cycle = zaqar if face == "zaqar" else sqs
    cycle.close = store.close  # type: ignore[attr-defined]
    return cycle


def acknowledging(held: tuple[str, list[str]] | None) -> bytes:
    """A claim's body that acknowledges `held` (claim id, ids), if any."""
    body: dict[str, Any] = {"ttl": 300, "grace": 60}
    if held is not None:
        body["acknowledge"] = {"claim_id": held[0], "ids": held[1]}
    return json.dumps(body).encode()


class _Body:
    """An answer's body as botocore reads a response's."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> list[bytes]:
        return [self.data]


def encoded(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """`headers` as an ASGI scope holds them, but for their length (each request's own)."""
    return [
        (k.lower().encode(), v.encode())
        for k, v in headers.items()
        if k.lower() != "content-length"
    ]


class InProcessApp:
    """The app of `deadletter serve`, called as uvicorn calls it, without a socket; `cycle`
    is the face's."""

    def __init__(self, url: str, face: str) -> None:
        from deadletter.api.app import AppOptions, Limits, build_app
        from deadletter.engine.engine import Engine
        from deadletter.storage import open_store

        self.store = open_store(url)
        limits = Limits(zaqar_body=1 << 20, sqs_body=1 << 20)
        self.app = build_app(Engine(self.store), AppOptions(), background=[], limits=limits)
        self.loop = asyncio.new_event_loop()
        self.cycle = self.zaqar if face == "zaqar" else self.sqs
        if face == "zaqar":
            self.headers = encoded(ZAQAR_HEADERS)
            self.messages = json.dumps({"messages": [{"body": BODY, "ttl": 3600}] * BATCH}).encode()
            self.loop.run_until_complete(self.request("PUT", f"/v2/queues/{QUEUE}", b"{}"))
            self.held: tuple[str, list[str]] | None = None
        else:
            # boto3's requests, answered by this app as it makes them, and replayed.
            self.url, captured = boto3_cycle("http://127.0.0.1:8888", self._answer)
            self.sending, self.receiving, self.deleting = (
                (encoded(c.headers), c.body) for c in captured
            )

    async def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        query: str = "",
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """(status, headers, body) of the app's answer; an error status raises, but for
        `headers` given (a request replayed as its client sent it)."""
        given = headers is not None
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
            "headers": [
                *(self.headers if headers is None else headers),
                (b"content-length", str(len(body)).encode()),
            ],
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
        if status >= 300 and not given:
            raise RuntimeError(f"{method} {path} -> {status}: {answer[:200]!r}")
        return status, messages[0]["headers"], answer

    def _answer(self, request: Any) -> Any:
        """A botocore request answered by the app (boto3's `before-send`)."""
        from botocore.awsrequest import AWSResponse

        headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        status, answer_headers, body = self.loop.run_until_complete(
            self.request("POST", "/", bytes(request.body), headers=encoded(headers))
        )
        return AWSResponse(
            request.url, status, {k.decode(): v.decode() for k, v in answer_headers}, _Body(body)
        )

    def _post(self, captured: tuple[list[tuple[bytes, bytes]], bytes], body: bytes = b"") -> bytes:
        headers, body = captured[0], body or captured[1]
        status, _, answer = self.loop.run_until_complete(
            self.request("POST", "/", body, headers=headers)
        )
        if status >= 300:
            raise RuntimeError(f"POST / -> {status}: {answer[:200]!r}")
        return answer

    def zaqar(self) -> dict[str, float]:
        def run(method: str, path: str, body: bytes = b"", query: str = "") -> bytes:
            return self.loop.run_until_complete(self.request(method, path, body, query))[2]

        messages = self.messages
        t0 = time.process_time()
        run("POST", f"/v2/queues/{QUEUE}/messages", messages)
        t1 = time.process_time()
        claim = b'{"ttl": 300, "grace": 60}'
        answer = run("POST", f"/v2/queues/{QUEUE}/claims", claim, f"limit={BATCH}")
        t2 = time.process_time()
        claim_id, ids = claim_of(answer)
        query = f"ids={','.join(ids)}&claim_ids={claim_id}"
        t3 = time.process_time()
        run("DELETE", f"/v2/queues/{QUEUE}/messages", b"", query)
        t4 = time.process_time()
        run("POST", f"/v2/queues/{QUEUE}/messages", messages)
        body = acknowledging(self.held)
        t5 = time.process_time()
        answer = run("POST", f"/v2/queues/{QUEUE}/claims", body, f"limit={BATCH}")
        t6 = time.process_time()
        self.held = claim_of(answer)
        return {"send": t1 - t0, "claim": t2 - t1, "delete": t4 - t3, "claim+ack": t6 - t5}

    def sqs(self) -> dict[str, float]:
        t0 = time.process_time()
        self._post(self.sending)
        t1 = time.process_time()
        answer = self._post(self.receiving)
        t2 = time.process_time()
        deleting = delete_batch(self.url, answer)
        t3 = time.process_time()
        self._post(self.deleting, deleting)
        t4 = time.process_time()
        return {"send": t1 - t0, "claim": t2 - t1, "delete": t4 - t3}

    def close(self) -> None:
        self.loop.close()
        self.store.close()


def http_cycle(store: str, face: str) -> tuple[Callable[[], dict[str, float]], Deadletter]:
    import deadletter

    # The server runs the code this process imports (PYTHONPATH may name another checkout's).
    system = Deadletter("zaqar", store, src=Path(deadletter.__file__).resolve().parents[2])
    system.fresh()
    assert system.proc is not None
    pid = system.proc.popen.pid
    port = int(system.proc.popen.args[system.proc.popen.args.index("--port") + 1])
    held: list[tuple[str, list[str]] | None] = [None]
    claims = f"/v2/queues/faces-zaqar/claims?limit={BATCH}"
    zaqar_face = ZaqarFace(port) if face == "zaqar" else None
    sqs_face = SqsFace(port) if face == "sqs" else None

    def zaqar() -> dict[str, float]:
        assert zaqar_face is not None
        t0 = server_cpu_ns(pid)
        zaqar_face.send()
        t1 = server_cpu_ns(pid)
        path = zaqar_face.receive()
        t2 = server_cpu_ns(pid)
        zaqar_face.delete(path)
        t3 = server_cpu_ns(pid)
        zaqar_face.send()
        body = acknowledging(held[0])
        t4 = server_cpu_ns(pid)
        answer = zaqar_face.conn.request("POST", claims, body, ZAQAR_HEADERS)
        t5 = server_cpu_ns(pid)
        held[0] = claim_of(answer)
        spent = {"send": t1 - t0, "claim": t2 - t1, "delete": t3 - t2, "claim+ack": t5 - t4}
        return {op: ns / 1e9 for op, ns in spent.items()}

    def sqs() -> dict[str, float]:
        assert sqs_face is not None
        t0 = server_cpu_ns(pid)
        sqs_face.send()
        t1 = server_cpu_ns(pid)
        deleting = sqs_face.receive()
        t2 = server_cpu_ns(pid)
        sqs_face.delete(deleting)
        t3 = server_cpu_ns(pid)
        spent = {"send": t1 - t0, "claim": t2 - t1, "delete": t3 - t2}
        return {op: ns / 1e9 for op, ns in spent.items()}

    return (zaqar if face == "zaqar" else sqs), system


def measure(cycle: Callable[[], dict[str, float]], cycles: int) -> dict[str, float]:
    """Mean ms per request of each operation, after a warm-up of a tenth of the cycles."""
    for _ in range(max(cycles // 10, 10)):
        cycle()
    spent: dict[str, list[float]] = {}
    for _ in range(cycles):
        for op, seconds in cycle().items():
            spent.setdefault(op, []).append(seconds)
    return {op: statistics.fmean(s) * 1000 for op, s in spent.items()}


def run(
    store: str, faces: list[str], layers: list[str], cycles: int, folder: Path
) -> dict[str, dict[str, dict[str, float]]]:
    """{face: {layer: {operation: ms}}} of one run on `store`."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for face in faces:
        out[face] = {}
        for layer in (layer for layer in LAYERS[face] if layer in layers):
            out[face][layer] = _layer(store, face, layer, cycles, folder)
    return out


def _layer(store: str, face: str, layer: str, cycles: int, folder: Path) -> dict[str, float]:
    if layer == "http":
        cycle, system = http_cycle(store, face)
        try:
            return measure(cycle, cycles)
        finally:
            system.stop()
    db = Database(store, folder)
    try:
        if layer == "app":
            app = InProcessApp(db.url, face)
            try:
                return measure(app.cycle, cycles)
            finally:
                app.close()
        engine = engine_cycle(db, durable=layer == "engine", face=face)
        try:
            return measure(engine, cycles)
        finally:
            engine.close()  # type: ignore[attr-defined]
    finally:
        db.close()


def render(results: dict[str, list[dict[str, dict[str, dict[str, float]]]]]) -> str:
    lines = [
        f"CPU ms per request of {BATCH} messages, median of the runs (min-max); a cycle is a"
        " send, a claim and a delete (SQS: SendMessageBatch, ReceiveMessage,"
        " DeleteMessageBatch); *adds* is the median of this layer's cycle less the layer above"
        " it on the same face; *claim+ack* is a Zaqar claim that acknowledges the batch before.",
        "",
        "| store | face | layer | send | claim | delete | claim+ack | cycle | adds"
        " | (claim + delete) / send | claim+ack / send |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for store, runs in results.items():
        for face in runs[0]:
            previous: float | None = None
            for layer in runs[0][face]:
                by_run = [r[face][layer] for r in runs]
                cells: dict[str, tuple[float, float, float]] = {}
                for op in (*OPERATIONS, "cycle"):
                    if op != "cycle" and op not in by_run[0]:
                        continue
                    values = [_cycle(r) if op == "cycle" else r[op] for r in by_run]
                    cells[op] = (statistics.median(values), min(values), max(values))
                cycle = cells["cycle"][0]
                adds = "" if previous is None else f"{cycle - previous:+.3f}"
                previous = cycle
                shown = [
                    f"{cells[op][0]:.3f} ({cells[op][1]:.3f}-{cells[op][2]:.3f})"
                    if op in cells
                    else ""
                    for op in (*OPERATIONS, "cycle")
                ]
                send = cells["send"][0]
                ratio = (cells["claim"][0] + cells["delete"][0]) / send
                acked = f"{cells['claim+ack'][0] / send:.2f}" if "claim+ack" in cells else ""
                row = [store, face, layer, *shown, adds, f"{ratio:.2f}", acked]
                lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _cycle(ms: dict[str, float]) -> float:
    """The standard cycle: a send, a claim and a delete."""
    return ms["send"] + ms["claim"] + ms["delete"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench layers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgres", help="comma-separated stores")
    parser.add_argument("--faces", default="zaqar,sqs", help="comma-separated faces")
    parser.add_argument(
        "--layers",
        default=",".join(SHORT),
        help=f"comma-separated layers, of {','.join(SHORT)} (those a face has)",
    )
    parser.add_argument("--cycles", type=int, default=400, help="cycles per layer and run")
    parser.add_argument("--runs", type=int, default=3, help="runs per store")
    parser.add_argument("--out", default=str(RESULTS / "layers"), help="results path, no suffix")
    args = parser.parse_args(argv)
    folder = Path(__file__).parent / "work" / "layers"
    faces, layers = args.faces.split(","), [SHORT[name] for name in args.layers.split(",")]
    results: dict[str, list[dict[str, dict[str, dict[str, float]]]]] = {}
    for store in args.stores.split(","):
        results[store] = []
        for i in range(args.runs):
            result = run(store, faces, layers, args.cycles, folder)
            results[store].append(result)
            figures = {
                face: {layer: {op: round(ms, 3) for op, ms in r.items()} for layer, r in by.items()}
                for face, by in result.items()
            }
            print(f"{store} run {i + 1}: {figures}", flush=True)
    table = render(results)
    doc = {"cycles": args.cycles, "batch": BATCH, "results": results}
    write_results(Path(args.out), doc, table)
    print(table)
    return 0
