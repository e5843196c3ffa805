"""One client sends a request whose header is tens of MiB; how long another tenant's request
takes meanwhile.

    PYTHONPATH=src:. python -m bench head_flood [--mib 48]

Starts `deadletter serve` on SQLite (the sources on PYTHONPATH), makes queue `q1` of project
`other`, then sends `GET /v2/ping` with one header of `--mib` MiB on one connection while
`GET /v2/queues/q1/stats` of project `other` is asked again and again on another. Reports the
flood's answer and duration and the stats requests' p50 and max latency.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx

CLIENT = "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench head_flood")
    parser.add_argument("--mib", type=int, default=48)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        port = _port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "deadletter", "serve", "--port", str(port),
             "--db", f"sqlite:///{tmp}/d.db"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "DEADLETTER_DATA_DIR": tmp},
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{url}/v2/ping", timeout=1).status_code == 204:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise SystemExit("the server did not start")
                time.sleep(0.05)
            headers = {"Client-ID": CLIENT, "X-Project-ID": "other"}
            httpx.put(f"{url}/v2/queues/q1", json={}, headers=headers)
            flood: dict[str, object] = {}

            def send() -> None:
                began = time.monotonic()
                with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
                    try:
                        s.sendall(b"GET /v2/ping HTTP/1.1\r\nHost: t\r\nX-Big: ")
                        chunk = b"a" * (1024 * 1024)
                        for _ in range(args.mib):
                            s.sendall(chunk)
                        s.sendall(b"\r\n\r\n")
                        flood["answer"] = s.recv(64).split(b"\r\n", 1)[0].decode()
                    except OSError as exc:
                        flood["answer"] = f"connection closed ({type(exc).__name__})"
                flood["seconds"] = time.monotonic() - began

            thread = threading.Thread(target=send)
            latencies: list[float] = []
            with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
                thread.start()
                while thread.is_alive() or len(latencies) < 20:
                    began = time.monotonic()
                    client.get("/v2/queues/q1/stats")
                    latencies.append(time.monotonic() - began)
            thread.join()
        finally:
            proc.terminate()
            proc.wait(30)
    latencies.sort()
    print("| measure | value |\n|---|---|")
    print(f"| {args.mib} MiB header: answer | {flood.get('answer')} |")
    print(f"| {args.mib} MiB header: seconds | {flood.get('seconds', 0.0):.2f} |")
    print(f"| other tenant's stats, p50 | {latencies[len(latencies) // 2]:.4f} s |")
    print(f"| other tenant's stats, max | {latencies[-1]:.4f} s |")
    return 0
