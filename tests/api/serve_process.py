"""Starting `deadletter serve` as a child process on a free port, for tests of the process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

DEADLETTER = str(Path(sys.executable).parent / "deadletter")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(db_url: str, data_dir: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start the server and wait until it answers ping; return (process, base URL)."""
    port = free_port()
    with (data_dir / f"server-{port}.log").open("wb") as log:
        proc = subprocess.Popen(
            [DEADLETTER, "serve", "--port", str(port), "--db", db_url, *extra],
            stdout=log,
            stderr=log,
            env={**os.environ, "DEADLETTER_DATA_DIR": str(data_dir)},
        )
    url = f"http://127.0.0.1:{port}"
    wait_for_ping(url, proc)
    return proc, url


def wait_for_ping(url: str, proc: subprocess.Popen[bytes]) -> None:
    """Return once the server at `url` answers ping; RuntimeError if `proc` ends first."""
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/v2/ping", timeout=1).status_code == 204:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"deadletter serve did not start (exit {proc.poll()})")
        time.sleep(0.05)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)
