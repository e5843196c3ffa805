"""`./dev bench framework`: HTTP overhead of the Starlette stack, bare and with deadletter's
Zaqar face (headers, thread hop, metrics middleware), and a message post on SQLite.

Server (uvicorn, one worker) and clients run in one process, so figures are relative."""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from deadletter.api.app import build_app
from deadletter.engine.engine import Engine
from deadletter.storage import open_store


@contextmanager
def serving(app: Starlette) -> Iterator[str]:
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def bare_app() -> Starlette:
    async def hello(request: Request) -> JSONResponse:
        return JSONResponse({"hello": "world"})

    return Starlette(routes=[Route("/hello", hello)])


def measure(
    url: str, call: Callable[[httpx.Client], httpx.Response], n: int, clients: int
) -> dict[str, float]:
    latencies: list[float] = []
    lock = threading.Lock()
    headers = {"Client-ID": str(uuid.uuid4())}

    def run() -> None:
        mine = []
        with httpx.Client(base_url=url, headers=headers) as c:
            for _ in range(n // clients):
                start = time.perf_counter()
                r = call(c)
                mine.append(time.perf_counter() - start)
                assert r.status_code < 300, r.text
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=run) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "req_per_s": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./dev bench framework", description=__doc__)
    ap.add_argument("-n", type=int, default=2000, help="requests per case")
    ap.add_argument("--clients", type=int, default=4)
    args = ap.parse_args(argv)
    body = {"messages": [{"body": {"event": "order.created", "id": 42}}]}
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'bench.db'}")
        try:
            app = build_app(Engine(store))
            cases: list[tuple[str, Starlette, Callable[[httpx.Client], httpx.Response]]] = [
                ("starlette bare JSON route", bare_app(), lambda c: c.get("/hello")),
                ("deadletter GET /v2 (JSON home)", app, lambda c: c.get("/v2")),
                ("deadletter GET /v2/queues (store read)", app, lambda c: c.get("/v2/queues")),
                (
                    "deadletter POST message (SQLite commit)",
                    app,
                    lambda c: c.post("/v2/queues/bench/messages", json=body),
                ),
            ]
            print(f"{'case':45} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
            for name, case_app, call in cases:
                with serving(case_app) as url:
                    measure(url, call, min(200, args.n), args.clients)  # warm-up
                    m = measure(url, call, args.n, args.clients)
                print(f"{name:45} {m['req_per_s']:8.0f} {m['p50_ms']:8.2f} {m['p99_ms']:8.2f}")
        finally:
            store.close()
    return 0
