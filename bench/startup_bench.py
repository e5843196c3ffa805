"""CPU seconds a `deadletter` command costs from exec to exit, against a server of its own.

    ./dev bench startup [--runs 15] [--base OTHER/src]

Each command runs `--runs` times as a fresh process (`python -m deadletter ...`); its user
plus system CPU is read from the children's rusage, which the load of other jobs inflates
far less than the wall clock. Printed: min and median per command. With `--base`, the same
commands run with that source tree first on the path too (another version of the code), in
turn with this one. `-X importtime` says where a command's time goes:

    PYTHONPATH=src python -X importtime -m deadletter send orders x 2>&1 | sort -t'|' -k2 -n
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

SRC = str(Path(__file__).resolve().parents[1] / "src")
COMMANDS = {
    "--help": ["--help"],
    "send": ["send", "orders", '{"order": 1}'],
    "claim": ["claim", "orders"],
}


def cpu_of(argv: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def serve(work: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = 18000 + os.getpid() % 1000
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deadletter",
            "serve",
            "--port",
            str(port),
            "--db",
            f"sqlite:///{work / 'bench.db'}",
        ],
        env={**env, "DEADLETTER_DATA_DIR": str(work)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/v2/ping").status_code == 204:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench startup")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--base", help="Another version's src/, measured in turn with this one.")
    args = parser.parse_args(argv)
    trees = {"this": SRC, **({"base": args.base} if args.base else {})}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": SRC}
        proc, url = serve(Path(tmp), env)
        try:
            subprocess.run(
                [sys.executable, "-m", "deadletter", "queue", "create", "orders"],
                env={**env, "DEADLETTER_URL": url},
                check=True,
                stdout=subprocess.DEVNULL,
            )
            seconds: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.runs):
                for name, tree in trees.items():
                    run_env = {**os.environ, "PYTHONPATH": tree, "DEADLETTER_URL": url}
                    for command, words in COMMANDS.items():
                        argv = [sys.executable, "-m", "deadletter", *words]
                        seconds.setdefault((name, command), []).append(cpu_of(argv, run_env))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"{'tree':6} {'command':8} {'min (s)':>8} {'median (s)':>11}   ({args.runs} runs)")
    for (name, command), values in seconds.items():
        print(f"{name:6} {command:8} {min(values):8.3f} {statistics.median(values):11.3f}")
    return 0
