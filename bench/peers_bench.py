"""`./dev bench peers`: deadletter side by side with RabbitMQ, Zaqar and moto."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench import proc
from bench.peers import profile
from bench.peers import systems as sysmod
from bench.peers.stats import (
    METRICS,
    clients_key,
    render_clients_table,
    render_table,
    summarize,
)
from bench.peers.workloads import WORKLOADS, Params

RESULTS = Path(__file__).parent / "results"
BASELINE = "deadletter-zaqar-sqlite"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
RESULTS_MARKER = "<!-- results -->"


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="./dev bench peers", description=__doc__)
    ap.add_argument("--systems", default=",".join(sysmod.ALL), help="comma-separated systems")
    ap.add_argument("--workloads", default="w1,w2,w3,w4", help="comma-separated of w1..w4")
    ap.add_argument("--runs", type=int, default=3, help="runs per system and workload")
    ap.add_argument("-n", type=int, default=20_000, help="messages in W1 and W2")
    ap.add_argument("--redrive-n", type=int, default=10_000, help="messages in the W3 DLQ")
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument(
        "--clients",
        default="",
        help="comma-separated counts: run W1 once per count with that many producers and "
        "as many consumers (e.g. 4,8,16), in place of --producers/--consumers",
    )
    ap.add_argument("--rate", type=float, default=50.0, help="W4 claims per second")
    ap.add_argument("--duration", type=float, default=10.0, help="W4 seconds")
    ap.add_argument("--timeout", type=float, default=600.0, help="cap per workload run, s")
    ap.add_argument("--baseline", default=BASELINE, help="system the ratios divide by")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="record deadletter's server with py-spy during each workload (bench/work/profiles)",
    )
    ap.add_argument(
        "--profile-rate", type=int, default=50, help="py-spy samples per second (--profile)"
    )
    ap.add_argument("--out", default=str(RESULTS / "peers"), help="results path without suffix")
    ap.add_argument(
        "--keep",
        action="store_true",
        help="keep the other systems' results already in the output (to re-run some systems)",
    )
    ap.add_argument(
        "--base",
        help="another checkout: each deadletter system also runs its code, just before this"
        " one's, under the system's name with -base (not the -ack- systems: a checkout before"
        " the extension has no claim that acknowledges)",
    )
    args = ap.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    if args.base:
        args.base = Path(args.base).resolve()
        args.systems = [
            n
            for s in args.systems
            for n in (
                [s + sysmod.BASE_SUFFIX, s]
                if s.startswith("deadletter-") and "-ack-" not in s
                else [s]
            )
        ]
    args.workloads = [w for w in args.workloads.split(",") if w]
    try:
        args.clients = sorted({int(c) for c in args.clients.split(",") if c})
    except ValueError:
        ap.error(f"--clients takes comma-separated counts, not {args.clients!r}")
    unknown = [s for s in args.systems if not _known(s.removesuffix(sysmod.BASE_SUFFIX))]
    unknown += [w for w in args.workloads if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown: {', '.join(unknown)}; systems are {', '.join(sysmod.ALL)}")
    return args


def _known(system: str) -> bool:
    """A system of `sysmod.ALL`, or a deadletter one on PostgreSQL served by N processes
    (`deadletter-zaqar-postgres-w4`: `deadletter serve --workers 4`)."""
    served = re.fullmatch(r"(deadletter-\w+-postgres)-w[1-9]\d*", system)
    return system in sysmod.ALL or (served is not None and served.group(1) in sysmod.ALL)


def machine() -> dict[str, Any]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        mem_gib = round(pages / 2**30, 1)
    except (ValueError, OSError):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem_gib,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


class Profiler:
    """py-spy recording the deadletter server for one workload run."""

    def __init__(self, pid: int, path: Path, rate: int = 50) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.proc = subprocess.Popen(
            [
                str(sysmod.VENV_BIN / "py-spy"),
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "--rate",
                str(rate),
                # Only the thread holding the GIL: where the server's CPU goes, not where
                # its threads wait for a lock or a commit.
                "--gil",
                "-o",
                str(path),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def with_server_cpu(
    result: dict[str, Any],
    before: tuple[float, float] | None,
    pid: int | None,
    client_before: float,
    database_before: float | None = None,
) -> None:
    """Server CPU seconds per 1,000 messages of the run (W1, W2: its N messages, each sent,
    received and deleted), and apart from it the load generator's: this process, whose
    threads share one interpreter lock, so that it can use at most about one core. For a
    system on PostgreSQL (`database_before` given), PostgreSQL's own too (`db_cpu`): the
    server's figure leaves out the store's work, which SQLite's and RabbitMQ's include."""
    if "error" in result:
        return
    if database_before is not None and result.get("n"):
        result["db_cpu"] = (proc.postgres_cpu_seconds() - database_before) * 1000 / result["n"]
    client = time.process_time() - client_before
    result["client_cpu_seconds"] = client
    result["client_cores"] = client / result["seconds"] if result.get("seconds") else None
    if result.get("n"):
        result["client_cpu"] = client * 1000 / result["n"]
    after = proc.cpu_split(pid) if pid else None
    if before is None or after is None:
        return
    # In the kernel (sockets, the disk's writes and syncs) apart from in the process itself.
    result["server_user_seconds"] = after[0] - before[0]
    result["server_system_seconds"] = after[1] - before[1]
    spent = sum(after) - sum(before)
    result["server_cpu_seconds"] = spent
    if result.get("n"):
        result["server_cpu"] = spent * 1000 / result["n"]


def run_system(
    name: str, args: argparse.Namespace, params: Params, out: dict[str, Any]
) -> dict[str, Any]:
    """Run the workloads on one system, filling `out` as runs end (kept if interrupted)."""
    system = sysmod.make(name, os.cpu_count() or 2, args.base)
    plan = runs_of(args.workloads, args.clients, params)
    on_postgres = getattr(system, "store", None) == "postgres"  # PostgreSQL's CPU counted too
    out.update({"runs": {key: [] for key, _w, _p in plan}, "notes": []})
    try:
        system.start()
        out["version"] = system.version()
        for run in range(args.runs):
            driver = system.fresh()
            try:
                for workload, base_workload, run_params in plan:
                    sysmod.log(f"{name} run {run + 1}/{args.runs} {workload}")
                    pid = system.server_pid()
                    prof = None
                    if args.profile and pid:
                        prof = Profiler(
                            pid,
                            sysmod.WORK / "profiles" / f"{name}-{workload}-{run + 1}.txt",
                            args.profile_rate,
                        )
                    cpu_before = proc.cpu_split(pid) if pid else None
                    client_before = time.process_time()
                    database_before = proc.postgres_cpu_seconds() if on_postgres else None
                    try:
                        result = WORKLOADS[base_workload](driver, run_params)
                    except Exception as exc:
                        traceback.print_exc()
                        result = {"error": f"{type(exc).__name__}: {exc}"[:500]}
                    finally:
                        if prof:
                            prof.stop()
                    if base_workload in ("w1", "w2"):
                        with_server_cpu(result, cpu_before, pid, client_before, database_before)
                    if prof and prof.path.exists():
                        text = profile.report(prof.path)
                        out.setdefault("profiles", {})[f"{workload}-{run + 1}"] = text
                        sysmod.log(text)
                    sysmod.log(f"  -> {json.dumps(_short(result))}")
                    out["runs"][workload].append(result)
                for what, count in driver.anomalies.items():
                    out["notes"].append(f"run {run + 1}: {count}x {what}")
                for note in driver.notes:
                    if note not in out["notes"]:
                        out["notes"].append(note)
            finally:
                system.end_run()
    except Exception as exc:
        traceback.print_exc()
        out["error"] = f"{type(exc).__name__}: {exc}"[:500]
    finally:
        system.stop()
    return out


def runs_of(
    workloads: list[str], clients: list[int], params: Params
) -> list[tuple[str, str, Params]]:
    """(key, workload, parameters) of each workload run in one round: W1 once per count of
    clients when counts are given (keyed `w1x4`, ...), every other workload as asked."""
    plan: list[tuple[str, str, Params]] = []
    for workload in workloads:
        if workload == "w1" and clients:
            plan += [
                (clients_key(c), "w1", dataclasses.replace(params, producers=c, consumers=c))
                for c in clients
            ]
        else:
            plan.append((workload, workload, params))
    return plan


def _short(result: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (round(v, 2) if isinstance(v, float) else v)
        for k, v in result.items()
        if k != "verify" or not v.get("ok")
    }


def summarize_system(data: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for workload, metric, _unit, _better in METRICS:
        runs = data.get("runs", {}).get(workload, [])
        s = summarize(r.get(metric) for r in runs if "error" not in r)
        if s:
            out.setdefault(workload, {})[metric] = s.as_dict()
    for key, runs in data.get("runs", {}).items():
        if key.startswith("w1x"):
            for metric in ("produce", "consume", "e2e", "server_cpu", "client_cpu", "db_cpu"):
                s = summarize(r.get(metric) for r in runs if "error" not in r)
                if s:
                    out.setdefault(key, {})[metric] = s.as_dict()
    return out


def notes_for(name: str, data: dict[str, Any]) -> list[str]:
    notes = list(data.get("notes", []))
    if "error" in data:
        notes.append(f"not run: {data['error']}")
    for workload, runs in data.get("runs", {}).items():
        errors = {r["error"] for r in runs if "error" in r}
        notes += [f"{workload} failed: {e}" for e in sorted(errors)]
        incomplete = [r for r in runs if "error" not in r and not r.get("complete")]
        if incomplete and workload != "w2":
            notes.append(f"{workload}: {len(incomplete)} run(s) incomplete (cap or empty claims)")
    extra = [r["consumed"] - r["n"] for r in data.get("runs", {}).get("w1", []) if "consumed" in r]
    if any(e > 0 for e in extra):
        notes.append(f"W1 duplicate deliveries per run {extra}")
    w2 = [r for r in data.get("runs", {}).get("w2", []) if "verify" in r]
    if w2:
        dups = [r["verify"]["duplicates"] for r in w2]
        bad = [p for r in w2 for p in r["verify"]["problems"] if "duplicate" not in p]
        notes.append(f"W2 verified {sum(r['verify']['ok'] for r in w2)}/{len(w2)}")
        if any(dups):
            notes.append(f"W2 duplicate acks per run {dups}")
        notes += sorted(set(bad))[:3]
    w3 = [r for r in data.get("runs", {}).get("w3", []) if "mode" in r]
    if w3:
        notes.append(f"W3 {w3[0]['mode']}")
    return notes


def write(args: argparse.Namespace, doc: dict[str, Any]) -> tuple[Path, Path]:
    base = Path(args.out)
    base.parent.mkdir(parents=True, exist_ok=True)
    order = {name: i for i, name in enumerate(sysmod.ALL)}
    doc["systems"] = dict(sorted(doc["systems"].items(), key=lambda kv: order.get(kv[0], 99)))
    summaries = {name: summarize_system(d) for name, d in doc["systems"].items()}
    notes = {name: notes_for(name, d) for name, d in doc["systems"].items()}
    doc["summary"] = summaries
    table = render_table(summaries, args.baseline, notes)
    if args.clients:
        table += (
            "\nW1 by clients per side (as many producers as consumers, the same N):\n\n"
            + render_clients_table(summaries, args.clients, args.baseline)
        )
    m = doc["machine"]
    versions = ", ".join(f"{n} {d.get('version', '?')}" for n, d in doc["systems"].items())
    p = doc["params"]
    md = (
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Python {m['python']}; "
        f"{m['date']}.\n\nVersions: {versions}.\n\n"
        f"Parameters: N={p['n']} (W1, W2; {p['poison_ratio']:.0%} poison, "
        f"{p['deliveries']} deliveries), W3 DLQ={p['redrive_n']}, "
        f"{p['producers']} producers, {p['consumers']} consumers, W4 {p['rate']:g}/s for "
        f"{p['duration']:g} s, {args.runs} runs. Cells: median (min-max) xratio to "
        f"{args.baseline}'s median.\n\n" + table
    )
    json_path, md_path = base.with_suffix(".json"), base.with_suffix(".md")
    json_path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    md_path.write_text(md)
    if base.resolve() == (RESULTS / "peers").resolve() and covers_every_workload(args):
        update_docs(md)
    return json_path, md_path


def covers_every_workload(args: argparse.Namespace) -> bool:
    """Whether the run is one whose table may stand for the latest results in the docs: every
    workload, at the one count of clients of its parameters. A run of W1 alone (the
    acceptance runs at 4 and 8 clients per side) would leave the docs a table of one column."""
    return set(args.workloads) == set(WORKLOADS) and not args.clients


def update_docs(md: str) -> None:
    """Copy the latest table into docs/benchmarks.md, below its results marker; the table
    runs to the next section heading, and the sections after it are kept."""
    if not DOCS.exists():
        return
    text = DOCS.read_text()
    head, marker, rest = text.partition(RESULTS_MARKER)
    if marker:
        _, heading, sections = rest.partition("\n## ")
        after = "\n## " + sections if heading else ""
        DOCS.write_text(head + marker + "\n\n" + md.rstrip("\n") + "\n" + after)


def keep_previous(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """Start from the systems of an earlier run with the same parameters."""
    if not path.exists():
        return doc
    old = json.loads(path.read_text())
    if old.get("params") != doc["params"]:
        sysmod.log(f"--keep: {path} was run with other parameters; starting afresh")
        return doc
    doc["systems"] = old.get("systems", {})
    doc["machine"]["earlier_runs"] = old["machine"].get("date")
    return doc


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    args = parse(argv)
    # Stop cleanly on SIGTERM too, and on Ctrl-C even when started in the background (where
    # the shell leaves SIGINT ignored).
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    params = Params(
        n=args.n,
        redrive_n=args.redrive_n,
        producers=args.producers,
        consumers=args.consumers,
        rate=args.rate,
        duration=args.duration,
        timeout=args.timeout,
    )
    doc: dict[str, Any] = {
        "machine": machine(),
        "params": vars(params),
        "workloads": args.workloads,
        "clients": args.clients,
        "systems": {},
    }
    if args.keep:
        doc = keep_previous(Path(args.out).with_suffix(".json"), doc)
    try:
        for name in args.systems:
            doc["systems"][name] = {}
            run_system(name, args, params, doc["systems"][name])
            write(args, doc)
    except KeyboardInterrupt:
        sysmod.log("interrupted: servers stopped, partial results written")
        write(args, doc)
        return 130
    json_path, md_path = write(args, doc)
    print(md_path.read_text())
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
