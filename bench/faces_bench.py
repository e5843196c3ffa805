"""The server's CPU per request on each face, with a client that costs the same on both.

    ./dev bench faces [--stores sqlite,postgres] [--cycles 500] [--pauses-ms 0,2] [--runs 3]
        [--base OTHER_CHECKOUT]

The peers bench measures each face with its own real client (httpx for Zaqar, boto3 for
SQS), and the server's CPU per message there moves with the client: a client that spends
more CPU per request leaves the server idle longer between requests, and on this kind of
machine a request that finds the server idle costs it more. This bench takes the client out:
one `deadletter serve` per store, both faces on it (each on a queue of its own), and one raw
HTTP/1.1 connection per face replaying the requests the real clients send. The SQS
requests are boto3's own, captured once (headers and body) and replayed; the Zaqar ones are
those of the peers bench's driver.

A cycle moves ten 1 KiB messages: send them, receive (claim) them, delete them. Cycles
alternate faces, so that a queue growing or a machine getting busier falls on both. Each
request's server CPU is the run time of every thread of the server across the request
(`/proc/PID/task/*/schedstat`, nanoseconds). With a pause, the client waits that long after
each request, as a slower client would.

Reports, per store and pause, the mean server CPU per request of each operation on each face
(median of the runs, with their range) and the ratio SQS over Zaqar; writes
bench/results/faces.json and faces.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench.peers.systems import ROOT, Deadletter

RESULTS = Path(__file__).parent / "results"
OPERATIONS = ("send", "receive", "delete")
BATCH = 10
BODY = json.dumps({"key": "x" * 1000})
ZAQAR_HEADERS = {
    "Client-ID": "3381af92-2b9e-11e3-b191-71861300734c",
    "X-Project-ID": "bench",
    "Content-Type": "application/json",
}


def server_cpu_ns(pid: int) -> int:
    """CPU nanoseconds every thread of `pid` has run so far."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError):  # a thread that ended between the listing and the read
            continue
    return total


class Connection:
    """One keep-alive HTTP/1.1 connection; a request answers its body, or raises on an error."""

    def __init__(self, port: int) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port)

    def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        self.http.request(method, path, body=body, headers=headers)
        response = self.http.getresponse()
        data = response.read()
        if response.status >= 300 and not (response.status == 204 and method == "DELETE"):
            raise RuntimeError(f"{method} {path} -> {response.status}: {data[:200]!r}")
        return data


class ZaqarFace:
    def __init__(self, port: int) -> None:
        self.conn = Connection(port)
        self.conn.request("PUT", "/v2/queues/faces-zaqar", b"{}", ZAQAR_HEADERS)
        self.messages = json.dumps({"messages": [{"body": BODY, "ttl": 3600}] * BATCH}).encode()

    def send(self) -> None:
        self.conn.request("POST", "/v2/queues/faces-zaqar/messages", self.messages, ZAQAR_HEADERS)

    def receive(self) -> str:
        path = f"/v2/queues/faces-zaqar/claims?limit={BATCH}"
        answer = self.conn.request("POST", path, b'{"ttl": 300, "grace": 60}', ZAQAR_HEADERS)
        claim, ids = claim_of(answer)
        return f"/v2/queues/faces-zaqar/messages?ids={','.join(ids)}&claim_ids={claim}"

    def delete(self, path: str) -> None:
        self.conn.request("DELETE", path, None, ZAQAR_HEADERS)


def claim_of(answer: bytes) -> tuple[str, list[str]]:
    """(claim id, message ids) of a Zaqar claim's answer."""
    hrefs = [m["href"] for m in json.loads(answer)["messages"]]
    claim_id = hrefs[0].split("claim_id=")[1].split("&")[0]
    return claim_id, [h.split("?")[0].rsplit("/", 1)[1] for h in hrefs]


def write_results(out: Path, doc: dict[str, Any], table: str) -> None:
    """`doc` as out.json and `table` as out.md."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(doc, indent=2) + "\n")
    out.with_suffix(".md").write_text(table)


@dataclass
class Captured:
    headers: dict[str, str]
    body: bytes


def boto3_cycle(
    endpoint: str, answer: Callable[[Any], Any] | None = None
) -> tuple[str, list[Captured]]:
    """(queue URL, [send, receive, delete]): boto3 creates the queue `faces-sqs`, then makes
    a cycle's three requests (SendMessageBatch of ten, ReceiveMessage of ten with a visibility
    timeout, DeleteMessageBatch of their receipts), each kept as sent (headers and body).
    `answer`, if given, answers each request in place of sending it (a botocore
    `AWSResponse`), as an app in this process does."""
    import boto3
    from botocore.config import Config

    client = boto3.session.Session().client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        config=Config(retries={"max_attempts": 1}),
    )
    captured: list[Captured] = []

    def keep(request: Any, **_: Any) -> Any:
        headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        captured.append(Captured(headers, bytes(request.body)))
        return None if answer is None else answer(request)

    client.meta.events.register("before-send.sqs.*", keep)
    url = client.create_queue(QueueName="faces-sqs")["QueueUrl"]
    entries = [{"Id": str(i), "MessageBody": BODY} for i in range(BATCH)]
    client.send_message_batch(QueueUrl=url, Entries=entries)
    received = client.receive_message(
        QueueUrl=url, MaxNumberOfMessages=BATCH, VisibilityTimeout=300
    )
    handles = [m["ReceiptHandle"] for m in received["Messages"]]
    client.delete_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": h} for i, h in enumerate(handles)]
    )
    client.close()
    return url, captured[1:]


def delete_batch(url: str, answer: bytes) -> bytes:
    """The DeleteMessageBatch body of the receipts of a ReceiveMessage's `answer`, as boto3
    writes it: the same keys and spacing as the captured batch."""
    messages = json.loads(answer)["Messages"]
    entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
    return json.dumps({"QueueUrl": url, "Entries": entries}).encode()


class SqsFace:
    """boto3's requests, captured once and replayed: what the server reads is what boto3
    sends (its headers, signature and JSON body), without boto3's CPU in the loop."""

    def __init__(self, port: int) -> None:
        self.url, (self.sending, self.receiving, self.deleting) = boto3_cycle(
            f"http://127.0.0.1:{port}"
        )
        self.conn = Connection(port)

    def _post(self, captured: Captured, body: bytes | None = None) -> bytes:
        body = captured.body if body is None else body
        headers = {**captured.headers, "Content-Length": str(len(body))}
        return self.conn.request("POST", "/", body, headers)

    def send(self) -> None:
        self._post(self.sending)

    def receive(self) -> bytes:
        return delete_batch(self.url, self._post(self.receiving))

    def delete(self, body: bytes) -> None:
        self._post(self.deleting, body)


def measure(pid: int, call: Callable[[], Any], pause: float, spent: list[int]) -> Any:
    before = server_cpu_ns(pid)
    result = call()
    spent.append(server_cpu_ns(pid) - before)
    if pause:
        time.sleep(pause)
    return result


def run(
    store: str, cycles: int, pause: float, trees: dict[str, Path]
) -> dict[str, dict[str, dict[str, float]]]:
    """Mean server CPU per request, in ms, {code: {face: {operation: ms}}}: one server per
    source tree of `trees` ({code: checkout root}), all serving at once, their cycles
    alternating, so that a machine getting busier falls on each alike."""
    systems = {code: Deadletter("zaqar", store, src=src) for code, src in trees.items()}
    try:
        for system in systems.values():
            system.fresh()
        # The faces once every server is up: a connection idle while another server starts
        # would be closed by its server's keep-alive timeout.
        servers = {}
        for code, system in systems.items():  # one server each: both faces answer on it
            assert system.proc is not None
            pid = system.proc.popen.pid
            port = int(system.proc.popen.args[system.proc.popen.args.index("--port") + 1])
            servers[code] = (pid, {"zaqar": ZaqarFace(port), "sqs": SqsFace(port)})
        for _, faces in servers.values():  # each reconnects at its first request
            for face in faces.values():
                face.conn.http.close()
        spent = {
            code: {f: {op: [] for op in OPERATIONS} for f in faces}
            for code, (_, faces) in servers.items()
        }
        for _ in range(cycles):
            for code, (pid, faces) in servers.items():
                for name, face in faces.items():
                    ops: dict[str, list[int]] = spent[code][name]
                    measure(pid, face.send, pause, ops["send"])
                    handle = measure(pid, face.receive, pause, ops["receive"])
                    measure(pid, partial(face.delete, handle), pause, ops["delete"])
        return {
            code: {
                f: {op: statistics.fmean(ns) / 1e6 for op, ns in ops.items()}
                for f, ops in by_face.items()
            }
            for code, by_face in spent.items()
        }
    finally:
        for system in systems.values():
            system.stop()


def summarize(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, dict[str, float]]]:
    """{face: {operation or "cycle": {median, min, max}}} over the runs."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for face in runs[0]:
        out[face] = {}
        for op in (*OPERATIONS, "cycle"):
            values = [sum(r[face].values()) if op == "cycle" else r[face][op] for r in runs]
            out[face][op] = {
                "median": statistics.median(values),
                "min": min(values),
                "max": max(values),
            }
    return out


def render(results: list[dict[str, Any]]) -> str:
    lines = [
        "Server CPU per request, ms: median of the runs (min-max). A cycle is one send,"
        f" one receive and one delete of {BATCH} messages; CPU s per 1k messages is the"
        " cycle's ms divided by 10.",
        "",
        "| code | store | pause (ms) | operation | Zaqar face | SQS face | SQS / Zaqar |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for r in results:
        s = r["summary"]
        for op in (*OPERATIONS, "cycle"):
            z, q = s["zaqar"][op], s["sqs"][op]
            cells = [f"{c['median']:.3f} ({c['min']:.3f}-{c['max']:.3f})" for c in (z, q)]
            ratio = q["median"] / z["median"]
            row = [r["code"], r["store"], f"{r['pause_ms']:g}", op, *cells, f"{ratio:.2f}"]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench faces", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgres", help="comma-separated stores")
    parser.add_argument("--cycles", type=int, default=500, help="cycles per face and run")
    parser.add_argument(
        "--pauses-ms", default="0,2", help="comma-separated pauses after each request, ms"
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per store and pause")
    parser.add_argument("--out", default=str(RESULTS / "faces"), help="results path, no suffix")
    parser.add_argument(
        "--base",
        help="another source tree (a checkout's root) to measure in the same run: a server"
        " of each serves at once, their cycles alternating",
    )
    args = parser.parse_args(argv)
    trees = {"this": ROOT}
    if args.base:
        trees = {"base": Path(args.base).resolve(), **trees}
    results: list[dict[str, Any]] = []
    for store in args.stores.split(","):
        for pause_ms in (float(p) for p in args.pauses_ms.split(",")):
            runs: dict[str, list[dict[str, dict[str, float]]]] = {code: [] for code in trees}
            for i in range(args.runs):
                for code, result in run(store, args.cycles, pause_ms / 1000, trees).items():
                    runs[code].append(result)
                    figures = {
                        f: {op: round(ms, 3) for op, ms in ops.items()} for f, ops in result.items()
                    }
                    print(
                        f"{code} {store} pause {pause_ms:g} ms run {i + 1}: {figures}", flush=True
                    )
            for code, src in trees.items():
                results.append(
                    {
                        "code": code,
                        "src": str(src),
                        "store": store,
                        "pause_ms": pause_ms,
                        "runs": runs[code],
                        "summary": summarize(runs[code]),
                    }
                )
    table = render(results)
    doc = {"cycles": args.cycles, "batch": BATCH, "results": results}
    write_results(Path(args.out), doc, table)
    print()
    print(table)
    return 0
