"""The analysis on a standalone Spark cluster beside local mode: same results, and each one's time.

    ./dev bench cluster [--size 100000] [--seed 1] [--cores 2] [--memory 2g]
                        [--work DIR] [--results DIR]

Starts a Spark master and one worker on this machine from the pyspark installation (the
same `spark-class` a real cluster runs), analyses one generated corpus with `local[N]` and
with `spark://127.0.0.1:PORT`, checks that both found the same patterns and assigned every
dead letter alike, and stops the cluster. Writes bench/results/cluster.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
WORK = HERE / "work" / "cluster"
RESULTS = HERE / "results"
START_TIMEOUT = 120.0


def spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the Spark {what} exited with {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the Spark {what} did not open port {port} in {START_TIMEOUT:.0f} s")


def _wait_for_worker(ui_port: int, cores: int) -> None:
    """Until the master's status page counts the worker's cores as alive."""
    import httpx

    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            status = httpx.get(f"http://127.0.0.1:{ui_port}/json/", timeout=2).json()
            if status.get("aliveworkers", 0) >= 1 and status.get("cores", 0) >= cores:
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.2)
    raise RuntimeError("the Spark worker did not register with the master")


@contextmanager
def standalone_cluster(cores: int = 2, memory: str = "2g", logs: Path = WORK) -> Iterator[str]:
    """A master and one worker of `cores` cores on 127.0.0.1; yields the master URL."""
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(spark_class().parents[1])}
    env.setdefault("PYSPARK_PYTHON", sys.executable)  # the executors run this interpreter
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    started: list[subprocess.Popen[bytes]] = []
    try:
        with (logs / "master.log").open("wb") as log:
            master = subprocess.Popen(
                [str(spark_class()), "org.apache.spark.deploy.master.Master", "--host",
                 "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
                env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        started.append(master)
        _wait_for_port(port, master, "master")
        with (logs / "worker.log").open("wb") as log:
            worker = subprocess.Popen(
                [str(spark_class()), "org.apache.spark.deploy.worker.Worker", master_url,
                 "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                 "--webui-port", str(worker_ui), "--work-dir", str(logs / "work")],
                env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        started.append(worker)
        _wait_for_worker(ui, cores)
        yield master_url
    finally:
        for process in reversed(started):
            process.terminate()
        for process in reversed(started):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def analyse_on(master: str, corpus: Path, out: Path) -> tuple[float, Any]:
    """(seconds, result) of one whole `analyze` run in a fresh session on `master`."""
    from deadletter.pipeline.analysis import analyze
    from deadletter.pipeline.schema import session

    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    spark = session(master, "deadletter-bench-cluster", {"spark.driver.memory": "2g"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        result = analyze(str(corpus), out, spark=spark, keep_assignments=True)
    finally:
        spark.stop()
    return time.perf_counter() - started, result


def same_results(a: Any, b: Any) -> bool:
    """The same patterns (template and size) and every dead letter in the same pattern."""

    def shape(result: Any) -> list[tuple[str, int]]:
        return sorted((str(p["template"]), int(p["count"])) for p in result.patterns)

    return shape(a) == shape(b) and a.assignments == b.assignments


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench cluster", description=__doc__)
    parser.add_argument("--size", type=int, default=100_000, help="dead letters to analyse")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2, help="cores of local mode and the worker")
    parser.add_argument("--memory", default="2g", help="the worker's memory")
    parser.add_argument("--work", type=Path, default=WORK, help="corpus, outputs and logs")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the report goes")
    args = parser.parse_args(argv)
    from deadletter.pipeline.corpus import write_jsonl

    work, results = args.work, args.results
    work.mkdir(parents=True, exist_ok=True)
    results.mkdir(parents=True, exist_ok=True)
    corpus = work / f"dead-{args.size}-{args.seed}.jsonl"
    if not corpus.exists():
        write_jsonl(corpus, args.size, args.seed)
    local = f"local[{args.cores}]"
    local_seconds, local_result = analyse_on(local, corpus, work / "out-local")
    print(f"{local}: {local_seconds:.1f} s, {len(local_result.patterns)} patterns", flush=True)
    with standalone_cluster(args.cores, args.memory, work) as master:
        cluster_seconds, cluster_result = analyse_on(master, corpus, work / "out-cluster")
    print(f"{master}: {cluster_seconds:.1f} s", flush=True)
    same = same_results(local_result, cluster_result)
    report = {
        "size": args.size,
        "cores": args.cores,
        "patterns": len(local_result.patterns),
        "same_results": same,
        "seconds": {"local": round(local_seconds, 1), "standalone": round(cluster_seconds, 1)},
        "load_average": os.getloadavg()[0],
    }
    text = (
        f"`deadletter analyze` on {args.size:,} generated dead letters, a fresh session each,"
        f" {args.cores} cores (load average {report['load_average']:.1f}):\n\n"
        "| master | seconds | patterns | same results as local |\n|---|---:|---:|---|\n"
        f"| local[{args.cores}] | {report['seconds']['local']} | {report['patterns']} | |\n"
        f"| standalone (1 master, 1 worker, spark://) | {report['seconds']['standalone']} |"
        f" {len(cluster_result.patterns)} | {'yes' if same else '**no**'} |\n"
    )
    (results / "cluster.json").write_text(json.dumps(report, indent=2) + "\n")
    (results / "cluster.md").write_text(text)
    print(text)
    return 0 if same else 1
