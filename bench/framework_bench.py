"""`./dev bench framework`: the HTTP server and JSON library choices, measured on the same load.

Each HTTP server serves, in a process of its own, a bare Starlette route and deadletter's real
app (both faces, SQLite); one load generator (threads of keep-alive `http.client`
connections, in this process) drives every case with the same clients: single requests, and
on each face a cycle of ten messages sent, received and deleted. A case reports requests (or
messages) per second and the server process's CPU seconds, user and system, per 1,000 of
them, which does not depend on how much CPU the load generator leaves it. Servers are
interleaved within each run.

Then JSON: encoding the faces' real answers (taken from the server: a Zaqar claim of ten
messages, an SQS ReceiveMessage of ten, a SendMessageBatch result) and parsing their real
requests, with the standard library (as Starlette's JSONResponse and `strict_json` do),
orjson and msgspec, in microseconds per document."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import timeit
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson

from bench.proc import cpu_split
from deadletter.api import strict_json

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
BIN = Path(sys.executable).parent
BODY = json.dumps({"event": "order.created", "detail": "x" * 960})  # about 1 KiB

# name -> command line after which the app target and port follow
SERVERS: dict[str, Callable[[str, int], list[str]]] = {
    "uvicorn h11 + asyncio": lambda app, port: _uvicorn(app, port, "h11", "asyncio"),
    "uvicorn httptools + asyncio": lambda app, port: _uvicorn(app, port, "httptools", "asyncio"),
    "uvicorn httptools + uvloop": lambda app, port: _uvicorn(app, port, "httptools", "uvloop"),
    "granian ASGI + uvloop": lambda app, port: [
        str(BIN / "granian"),
        "--interface",
        "asgi",
        "--factory",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--loop",
        "uvloop",
        "--log-level",
        "warning",
        "--no-ws",
        f"bench.framework_apps:{app}",
    ],
}


def _uvicorn(app: str, port: int, http: str, loop: str) -> list[str]:
    return [
        str(BIN / "python"),
        "-m",
        "uvicorn",
        "--factory",
        f"bench.framework_apps:{app}",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--http",
        http,
        "--loop",
        loop,
        "--log-level",
        "warning",
        "--no-access-log",
        "--lifespan",
        "on",
    ]


Request = tuple[str, str, bytes, dict[str, str]]  # method, path, body, headers
CLIENT = {"Client-ID": str(uuid.uuid4()), "Content-Type": "application/json"}
SQS_JSON = {"Content-Type": "application/x-amz-json-1.0"}


def _sqs(action: str, params: dict[str, Any]) -> Request:
    body = json.dumps(params).encode()
    return ("POST", "/", body, {**SQS_JSON, "X-Amz-Target": f"AmazonSQS.{action}"})


Step = Callable[[http.client.HTTPConnection], int]  # one step of a client: units it did
BATCH = 10


def _one(req: Request) -> Step:
    """A step of one request; the unit is the request."""

    def step(conn: http.client.HTTPConnection) -> int:
        _ok(conn, req)
        return 1

    return step


def _ok(conn: http.client.HTTPConnection, req: Request) -> bytes:
    status, data = _call(conn, req)
    if status >= 300:
        raise RuntimeError(f"{req[0]} {req[1]}: {status} {data[:200]!r}")
    return data


ZAQAR_BATCH = json.dumps({"messages": [{"body": json.loads(BODY), "ttl": 3600}] * BATCH}).encode()


def _zaqar_cycle(conn: http.client.HTTPConnection) -> int:
    """Post ten messages, claim ten, delete what was claimed, as the peers bench's Zaqar
    driver does; the unit is a message deleted."""
    _ok(conn, ("POST", "/v2/queues/fw-cycle/messages", ZAQAR_BATCH, CLIENT))
    claim = ("POST", f"/v2/queues/fw-cycle/claims?limit={BATCH}", b'{"ttl":60,"grace":60}', CLIENT)
    status, data = _call(conn, claim)
    if status == 204:
        return 0
    if status != 201:
        raise RuntimeError(f"claim: {status} {data[:200]!r}")
    hrefs = [m["href"] for m in json.loads(data)["messages"]]
    ids = ",".join(h.split("?")[0].rsplit("/", 1)[1] for h in hrefs)
    claim_id = hrefs[0].split("claim_id=")[1]
    _ok(
        conn,
        ("DELETE", f"/v2/queues/fw-cycle/messages?ids={ids}&claim_ids={claim_id}", b"", CLIENT),
    )
    return len(hrefs)


SQS_BATCH = _sqs(
    "SendMessageBatch",
    {
        "QueueUrl": "fw-cycle",
        "Entries": [{"Id": str(i), "MessageBody": BODY} for i in range(BATCH)],
    },
)
SQS_RECEIVE = _sqs(
    "ReceiveMessage",
    {"QueueUrl": "fw-cycle", "MaxNumberOfMessages": BATCH, "WaitTimeSeconds": 0,
     "VisibilityTimeout": 30},
)  # fmt: skip


def _sqs_cycle(conn: http.client.HTTPConnection) -> int:
    """SendMessageBatch of ten, ReceiveMessage of ten, DeleteMessageBatch of what came, as
    the peers bench's SQS driver does (without its long poll); the unit is a message deleted."""
    _ok(conn, SQS_BATCH)
    received = json.loads(_ok(conn, SQS_RECEIVE)).get("Messages", [])
    if not received:
        return 0
    entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(received)]
    _ok(conn, _sqs("DeleteMessageBatch", {"QueueUrl": "fw-cycle", "Entries": entries}))
    return len(received)


# case -> (app, its step, the unit of its figures: "req" or "msg")
CASES: dict[str, tuple[str, Step, str]] = {
    "bare JSON route": ("bare", _one(("GET", "/hello", b"", {})), "req"),
    "Zaqar GET /v2 (no store)": ("deadletter", _one(("GET", "/v2", b"", CLIENT)), "req"),
    "Zaqar POST 1 message (commit)": (
        "deadletter",
        _one(
            (
                "POST",
                "/v2/queues/fw/messages",
                json.dumps({"messages": [{"body": json.loads(BODY), "ttl": 3600}]}).encode(),
                CLIENT,
            )
        ),
        "req",
    ),
    "SQS SendMessage JSON (commit)": (
        "deadletter",
        _one(_sqs("SendMessage", {"QueueUrl": "fw-sqs", "MessageBody": BODY})),
        "req",
    ),
    "Zaqar post 10, claim 10, delete 10": ("deadletter", _zaqar_cycle, "msg"),
    "SQS send 10, receive 10, delete 10 (JSON)": ("deadletter", _sqs_cycle, "msg"),
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _call(conn: http.client.HTTPConnection, req: Request) -> tuple[int, bytes]:
    method, path, body, headers = req
    conn.request(method, path, body=body or None, headers=headers)
    r = conn.getresponse()
    return r.status, r.read()


class Served:
    """One HTTP server process serving one app."""

    def __init__(self, server: str, app: str, db: Path) -> None:
        self.port = _free_port()
        env = {**os.environ, "DEADLETTER_BENCH_DB": str(db), "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            SERVERS[server](app, self.port),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"{server} exited: {err[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{server} did not listen within 30 s")

    def call(self, req: Request) -> bytes:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            status, data = _call(conn, req)
        finally:
            conn.close()
        if status >= 300:
            raise RuntimeError(f"{req[0]} {req[1]}: {status} {data[:300]!r}")
        return data

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def load(port: int, step: Step, n: int, clients: int) -> dict[str, float]:
    """`n` steps from `clients` threads, each on its own keep-alive connection."""
    latencies: list[float] = []
    units: list[int] = []
    failures: list[str] = []
    lock = threading.Lock()

    def run() -> None:
        mine: list[float] = []
        done = 0
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            for _ in range(n // clients):
                start = time.perf_counter()
                done += step(conn)
                mine.append(time.perf_counter() - start)
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()
        with lock:
            latencies.extend(mine)
            units.append(done)

    threads = [threading.Thread(target=run) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(failures[0])
    latencies.sort()
    return {
        "units": sum(units),
        "per_s": sum(units) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
    }


def measure_servers(
    servers: list[str], n: int, clients: int, runs: int, tmp: Path
) -> dict[str, dict[str, list[dict[str, float]]]]:
    """{case: {server: [one result per run]}}; servers interleaved within each run."""
    out: dict[str, dict[str, list[dict[str, float]]]] = {c: {s: [] for s in servers} for c in CASES}
    by_app: dict[str, list[str]] = {}
    for case, (app, _, _) in CASES.items():
        by_app.setdefault(app, []).append(case)
    for run in range(runs):
        for server in servers:
            for app, cases in by_app.items():
                served = Served(server, app, tmp / f"{uuid.uuid4().hex[:8]}.db")
                try:
                    if app == "deadletter":
                        for queue in ("fw-sqs", "fw-cycle"):
                            served.call(_sqs("CreateQueue", {"QueueName": queue}))
                    for case in cases:
                        _, step, unit = CASES[case]
                        steps = n if unit == "req" else n // BATCH  # about n messages
                        load(served.port, step, min(200, steps), clients)  # warm-up
                        before = cpu_split(served.proc.pid) or (0.0, 0.0)
                        m = load(served.port, step, steps, clients)
                        after = cpu_split(served.proc.pid) or (0.0, 0.0)
                        per_1k = 1000 / max(1, m["units"])
                        m["server_cpu_per_1k"] = (sum(after) - sum(before)) * per_1k
                        m["server_system_per_1k"] = (after[1] - before[1]) * per_1k
                        out[case][server].append(m)
                        print(
                            f"run {run + 1} {server:28} {case:42} {m['per_s']:7.0f} {unit}/s"
                            f" {m['server_cpu_per_1k']:.3f} CPU s/1k {unit}",
                            file=sys.stderr,
                        )
                finally:
                    served.stop()
    return out


# JSON ------------------------------------------------------------------------------------


def real_documents(tmp: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """(answers as Python values, requests as bytes), taken from the real app."""
    served = Served("uvicorn httptools + uvloop", "deadletter", tmp / "shapes.db")
    try:
        post = json.dumps({"messages": [{"body": json.loads(BODY), "ttl": 3600}] * 10}).encode()
        served.call(("POST", "/v2/queues/shapes/messages", post, CLIENT))
        claim = served.call(
            ("POST", "/v2/queues/shapes/claims?limit=10", b'{"ttl":60,"grace":60}', CLIENT)
        )
        served.call(_sqs("CreateQueue", {"QueueName": "shapes-sqs"}))
        entries = [
            {
                "Id": f"m{i}",
                "MessageBody": BODY,
                "MessageAttributes": {"kind": {"DataType": "String", "StringValue": "order"}},
            }
            for i in range(10)
        ]
        batch = _sqs("SendMessageBatch", {"QueueUrl": "shapes-sqs", "Entries": entries})
        sent = served.call(batch)
        receive = served.call(
            _sqs(
                "ReceiveMessage",
                {
                    "QueueUrl": "shapes-sqs",
                    "MaxNumberOfMessages": 10,
                    "AttributeNames": ["All"],
                    "MessageAttributeNames": ["All"],
                },
            )
        )
    finally:
        served.stop()
    answers = {
        "Zaqar claim of 10": json.loads(claim),
        "SQS ReceiveMessage of 10": json.loads(receive),
        "SQS SendMessageBatch result": json.loads(sent),
    }
    return answers, {"Zaqar post of 10": post, "SQS SendMessageBatch of 10": batch[2]}


def _stdlib_dumps(value: Any) -> bytes:  # what Starlette's JSONResponse does
    return json.dumps(
        value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")


ENCODERS: dict[str, Callable[[Any], bytes]] = {
    "stdlib json": _stdlib_dumps,
    "orjson": orjson.dumps,
    "msgspec": msgspec.json.encode,
}
DECODERS: dict[str, Callable[[bytes], Any]] = {
    "strict_json (stdlib)": strict_json.loads,
    "orjson": orjson.loads,
    "msgspec": msgspec.json.decode,
}


def _per_call_us(fn: Callable[[], Any]) -> float:
    timer = timeit.Timer(fn)
    count, _ = timer.autorange()
    return min(timer.repeat(5, count)) / count * 1e6


def measure_json(tmp: Path) -> dict[str, dict[str, float]]:
    answers, requests = real_documents(tmp)
    out: dict[str, dict[str, float]] = {}
    for name, value in answers.items():
        out[f"encode {name}"] = {
            lib: _per_call_us(lambda f=f, v=value: f(v)) for lib, f in ENCODERS.items()
        }
    for name, raw in requests.items():
        out[f"parse {name}"] = {
            lib: _per_call_us(lambda f=f, r=raw: f(r)) for lib, f in DECODERS.items()
        }
    return out


# Report ----------------------------------------------------------------------------------


def render(
    servers: dict[str, dict[str, list[dict[str, float]]]],
    codecs: dict[str, dict[str, float]],
    args: argparse.Namespace,
) -> str:
    load_avg = " ".join(f"{x:.2f}" for x in os.getloadavg())
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    lines = [
        f"Framework benchmark: {args.n} requests per case from {args.clients} clients,"
        f" {args.runs} runs (medians); {os.cpu_count()} CPUs, Python {sys.version.split()[0]};"
        f" load average at the end {load_avg}; {when}.",
        "",
        "| case | server | per s | server CPU s / 1,000 | of which system | p50 ms |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for case, by_server in servers.items():
        for server, results in by_server.items():
            if not results:
                continue
            unit = "messages" if CASES[case][2] == "msg" else "requests"
            rps = statistics.median(r["per_s"] for r in results)
            cpu = statistics.median(r["server_cpu_per_1k"] for r in results)
            system = statistics.median(r["server_system_per_1k"] for r in results)
            p50 = statistics.median(r["p50_ms"] for r in results)
            lines.append(
                f"| {case} | {server} | {rps:,.0f} {unit} | {cpu:.3f} | {system:.3f} | {p50:.2f} |"
            )
    if codecs:
        libs = list(next(iter(codecs.values())))
        lines += ["", "JSON, microseconds per document (best of 5):", ""]
        lines += ["| document | " + " | ".join(libs) + " |", "|---|" + "---:|" * len(libs)]
        for name, row in codecs.items():
            lines.append(f"| {name} | " + " | ".join(f"{v:,.1f}" for v in row.values()) + " |")
        lines += [
            "",
            "The parse columns are the decoders' raw speed; `strict_json` also refuses NaN,",
            "Infinity, out-of-range numbers, lone surrogates and deep nesting.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./dev bench framework", description=__doc__)
    ap.add_argument("-n", type=int, default=2000, help="requests per case")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3, help="runs, servers interleaved in each")
    ap.add_argument("--servers", default=",".join(SERVERS), help="comma-separated")
    ap.add_argument("--no-json", action="store_true", help="skip the JSON libraries")
    ap.add_argument("--out", default=str(RESULTS / "framework"), help="results path, no suffix")
    args = ap.parse_args(argv)
    servers = [s for s in args.servers.split(",") if s]
    unknown = [s for s in servers if s not in SERVERS]
    if unknown:
        ap.error(f"unknown servers {unknown}; they are: {', '.join(SERVERS)}")
    with tempfile.TemporaryDirectory() as tmp:
        by_case = measure_servers(servers, args.n, args.clients, args.runs, Path(tmp))
        codecs = {} if args.no_json else measure_json(Path(tmp))
    text = render(by_case, codecs, args)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(
        json.dumps({"servers": by_case, "json": codecs, "args": vars(args)}, indent=1)
    )
    return 0
