"""Where a hot call's time goes inside the server on PostgreSQL, where the calls are grouped
(`api/threads.py`'s `_together` and `_Groups`, `PostgresStore._run_group`,
`Group.commit`): the peers bench's W1 against deadletter-zaqar-postgres, timed in the server.

    ./dev bench group_phases [--clients 4[,8,...]] [-n 20000] [--out NAME]

Per kind of call (the function its work wraps: `post_messages`, `create_claim`, ...), p50 and
p90 in ms of:

- wait: from `_together` on the loop until its group starts the call's work;
- run: the work, the call's statements in the group's transaction; of it, the time away in
  `LoopWaitingConnection.wait` (PostgreSQL's round trips, the loop serving other requests
  meanwhile) and the rest, the work's own time on the loop's thread;
- after: from the work's end until the caller resumes on the loop (the rest of the group, its
  COMMIT, the hand-back).

Per run: the groups, their mean size and COMMIT, and the occupancy of the one-at-a-time
section: the calls' run times summed over the span from the first start to the last end.

And per request, as the load generator saw it (its `ZaqarSession` calls timed) beside the
time its call spent in a group (wait, run and after): what is left is the HTTP, the loop
and the load generator's own threads, which share one interpreter.

And per process, over three seconds of the run from one second in: the share of the wall
time its threads ran, and the share they spent runnable but waiting for a CPU
(`/proc/PID/task/TID/schedstat`): the server's loop thread, its other threads, PostgreSQL's
processes, and the load generator.

Each count of clients (as many producers as consumers) is one W1 on a fresh database and a
fresh server, `deadletter serve` wrapped from outside by `bench/group_phases_serve.py`. The
table is printed, and with `--out NAME` written to `bench/results/group-phases-NAME.md`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.group_phases_serve import OUT
from bench.peers.drivers import ZaqarSession
from bench.peers.stats import percentile
from bench.peers.systems import VENV_BIN, WORK, Deadletter, log
from bench.peers.workloads import Params, steady
from bench.proc import pids_named

RESULTS = Path(__file__).parent / "results"
# Columns: the phase and how it is read from a call's record (group_phases_serve.py).
PHASES: dict[str, Callable[[list[Any]], float]] = {
    "wait": lambda c: c[2] - c[1],
    "run": lambda c: c[3] - c[2],
    "of it PostgreSQL": lambda c: c[4],
    "of it own": lambda c: c[3] - c[2] - c[4],
    "after": lambda c: c[6] - c[3],
}


def _threads(pid: int) -> dict[int, tuple[int, int]]:
    """Nanoseconds each thread of `pid` has run and waited for a CPU so far."""
    seen = {}
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                stat = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text()
                run, wait, _ = map(int, stat.split())
                seen[int(tid)] = (run, wait)
    return seen


def _scheduling(server: int) -> dict[str, dict[int, tuple[int, int]]]:
    """Each thread's nanoseconds run and waited so far (`_threads`), by part."""
    own = _threads(server)
    postgres: dict[int, tuple[int, int]] = {}
    for pid in pids_named("postgres"):
        postgres.update(_threads(pid))
    return {
        "server loop thread": {server: own.pop(server, (0, 0))},
        "server other threads": own,
        "PostgreSQL": postgres,
        "load generator": _threads(os.getpid()),
    }


class _Window(threading.Thread):
    """`_scheduling` over WINDOW seconds of a run, from SETTLE seconds into it, as shares of
    the wall time, summed over the threads that live through the window (the load
    generator's end with the run)."""

    SETTLE, WINDOW = 1.0, 3.0

    def __init__(self, server: int) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.shares: dict[str, list[float]] = {}

    def run(self) -> None:
        time.sleep(self.SETTLE)
        before, start = _scheduling(self.server), time.perf_counter()
        time.sleep(self.WINDOW)
        after, wall = _scheduling(self.server), time.perf_counter() - start
        for part, threads in after.items():
            lived = [tid for tid in threads if tid in before[part]]
            self.shares[part] = [
                sum(threads[t][i] - before[part][t][i] for t in lived) / 1e9 / wall for i in (0, 1)
            ]


# The load generator's requests, and the kind of call each makes in the server.
REQUESTS = {"send": "post_messages", "receive": "create_claim", "ack": "delete_messages"}


@contextmanager
def _timed_requests() -> Iterator[dict[str, list[float]]]:
    """Seconds of each `ZaqarSession` request of `REQUESTS`, by request, while inside."""
    seconds: dict[str, list[float]] = {name: [] for name in REQUESTS}
    lock = threading.Lock()
    originals = {name: getattr(ZaqarSession, name) for name in REQUESTS}

    def timed(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def request(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                with lock:
                    seconds[name].append(time.perf_counter() - start)

        return request

    for name, call in originals.items():
        setattr(ZaqarSession, name, timed(name, call))
    try:
        yield seconds
    finally:
        for name, call in originals.items():
            setattr(ZaqarSession, name, call)


class PhasedServer(Deadletter):
    """deadletter-zaqar-postgres, served with the group path timed."""

    def __init__(self, records: Path) -> None:
        super().__init__("zaqar", "postgres")
        self.env = {OUT: str(records)}

    def command(self) -> list[str]:
        return [str(VENV_BIN / "python"), "-m", "bench.group_phases_serve", "serve"]


def run(clients: int, n: int) -> dict[str, Any]:
    """One W1 with `clients` per side; its result and the server's records."""
    records = WORK / f"group-phases-{clients}.json"
    WORK.mkdir(parents=True, exist_ok=True)
    records.unlink(missing_ok=True)
    system = PhasedServer(records)
    log(f"W1, {clients} producers and {clients} consumers, N={n}")
    driver = system.fresh()
    try:
        server = system.server_pid()
        assert server is not None
        window = _Window(server)
        with _timed_requests() as client:
            window.start()
            result = steady(driver, Params(n=n, producers=clients, consumers=clients))
        window.join()
    finally:
        system.end_run()  # the server writes its records as it exits
    if not records.exists():
        raise RuntimeError(f"the server wrote no records: see {WORK / 'logs'}")
    return {
        "w1": result,
        "load": os.getloadavg()[0],
        "client": client,
        "scheduling": window.shares,
        **json.loads(records.read_text()),
    }


def _ms(values: list[float]) -> str:
    return f"{percentile(values, 50) * 1000:.2f} / {percentile(values, 90) * 1000:.2f}"


def markdown(runs: dict[int, dict[str, Any]], n: int) -> str:
    lines = [
        f"W1 (N={n:,}) on deadletter-zaqar-postgres, timed in the server;"
        " p50 / p90 in ms of each call's phases, by kind:",
        "",
        "| clients | kind | calls | " + " | ".join(PHASES) + " |",
        "|---:|---|---:|" + "---:|" * len(PHASES),
    ]
    totals = []
    for clients, data in runs.items():
        calls = [c for c in data["calls"] if c[7]]  # run in a group
        kinds: dict[str, list[list[Any]]] = {}
        for c in calls:
            kinds.setdefault(c[0], []).append(c)
        for kind, of_kind in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
            cells = " | ".join(_ms([phase(c) for c in of_kind]) for phase in PHASES.values())
            lines.append(f"| {clients} | {kind} | {len(of_kind):,} | {cells} |")
        groups = data["groups"]
        span = max(c[3] for c in calls) - min(c[2] for c in calls)
        occupancy = sum(c[3] - c[2] for c in calls) / span
        commits = [g[3] for g in groups if g[3] is not None]
        totals.append(
            f"| {clients} | {data['w1']['e2e']:,.0f} | {len(groups):,}"
            f" | {statistics.mean(g[0] for g in groups):.2f} | {_ms(commits)}"
            f" | {occupancy:.0%} | {len(data['calls']) - len(calls)} | {data['load']:.1f} |"
        )
    lines += [
        "",
        "Per request, p50 / p90 in ms: as the load generator saw it, and its call's time in a"
        " group (wait, run and after):",
        "",
        "| clients | request | call | requests | at the load generator | in a group |",
        "|---:|---|---|---:|---:|---:|",
    ]
    for clients, data in runs.items():
        for request, kind in REQUESTS.items():
            seen = data["client"][request]
            grouped = [c[6] - c[1] for c in data["calls"] if c[7] and c[0] == kind]
            if seen and grouped:
                lines.append(
                    f"| {clients} | {request} | {kind} | {len(seen):,} | {_ms(seen)}"
                    f" | {_ms(grouped)} |"
                )
    lines += [
        "",
        "Per process, over three seconds of the run from one second in: the share of the wall"
        " time its threads ran on a CPU, and the share they waited for one (runnable, not"
        " running), summed over its threads:",
        "",
        "| clients | process | ran | waited for a CPU |",
        "|---:|---|---:|---:|",
    ]
    for clients, data in runs.items():
        for part, (ran, waited) in data["scheduling"].items():
            lines.append(f"| {clients} | {part} | {ran:.0%} | {waited:.0%} |")
    lines += [
        "",
        "Per run: messages per second end to end, the groups, calls a group, p50 / p90 of a"
        " group's COMMIT in ms, the share of the span in which a call ran (occupancy), calls"
        " that ran outside a group, and the load average after the run:",
        "",
        "| clients | msg/s | groups | calls a group | COMMIT | occupancy | alone | load |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        *totals,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="./dev bench group_phases",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--clients", default="4", help="comma-separated producers (= consumers)")
    ap.add_argument("-n", type=int, default=20_000, help="messages in W1")
    ap.add_argument("--out", help="write bench/results/group-phases-NAME.md")
    args = ap.parse_args(argv)
    try:
        counts = sorted({int(c) for c in args.clients.split(",") if c})
    except ValueError:
        ap.error(f"--clients takes comma-separated counts, not {args.clients!r}")
    report = markdown({clients: run(clients, args.n) for clients in counts}, args.n)
    print(report)
    if args.out:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"group-phases-{args.out}.md").write_text(report)
    return 0
