"""Dead letters per second through the whole analysis job on Spark, and drain3 for comparison.

    ./dev bench pipeline [--sizes 100000,1000000] [--master local[2]] [--seed 1] [--no-drain3]

A small job runs first and is timed on its own: it pays for the JVM warming up and the Python
workers starting, which every fresh session (one `deadletter analyze` run) pays once. The
sizes are then timed in that warm session.

Writes bench/results/pipeline.json and bench/results/pipeline.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

from deadletter.pipeline.corpus import grouping_accuracy, write_jsonl

HERE = Path(__file__).parent
WORK = HERE / "work" / "pipeline"
RESULTS = HERE / "results"
WARM_UP_SIZE = 5000


def labels(path: Path) -> dict[str, str]:
    out = {}
    with path.open() as fh:
        for line in fh:
            r = json.loads(line)
            out[r["message_id"]] = r["label"]
    return out


def run_spark(spark: Any, path: Path, truth: dict[str, str]) -> dict[str, Any]:
    from deadletter.pipeline.analysis import analyze

    out = WORK / f"report-{path.stem}"
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    result = analyze(str(path), out, spark=spark, keep_assignments=True)
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 2),
        "per_second": round(len(truth) / seconds),
        "patterns": len(result.patterns),
        "accuracy": round(grouping_accuracy(truth, result.assignments), 4),
    }


def run_drain3(path: Path, truth: dict[str, str]) -> dict[str, Any]:
    """drain3 with stock settings on the flattened error text, one thread, mining only."""
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()
    config.profiling_enabled = False
    miner = TemplateMiner(config=config)
    texts: list[tuple[str, str]] = []
    with path.open() as fh:
        for line in fh:
            r = json.loads(line)
            texts.append((r["message_id"], " ".join((r["error"] or r["description"]).split())))
    started = time.perf_counter()
    for _, text in texts:
        miner.add_log_message(text)
    predicted = {}
    for mid, text in texts:
        cluster = miner.match(text)
        predicted[mid] = str(cluster.cluster_id if cluster else -1)
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 2),
        "per_second": round(len(texts) / seconds),
        "patterns": len(miner.drain.clusters),
        "accuracy": round(grouping_accuracy(truth, predicted), 4),
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Pipeline benchmark ({report['master']}, {report['cpus']} CPUs, "
        f"Python {report['python']}, seed {report['seed']})",
        "",
        f"Starting the Spark session took {report['session_start_seconds']} s and its first job "
        f"({WARM_UP_SIZE:,} dead letters) {report['first_job']['seconds']} s (JVM warm-up, Python "
        "workers starting): a fresh session, such as one `deadletter analyze` run, pays both "
        "once. The sizes below then ran in that warm session.",
        "",
        "| dead letters | engine | seconds | dead letters/s | patterns | grouping accuracy |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for row in report["runs"]:
        for engine in ("spark", "drain3"):
            r = row.get(engine)
            if r:
                name = (
                    f"deadletter analyze (Spark {report['master']}, whole job)"
                    if engine == "spark"
                    else "drain3 0.9 (1 thread, mining only)"
                )
                lines.append(
                    f"| {row['size']:,} | {name} | {r['seconds']} | {r['per_second']:,} | "
                    f"{r['patterns']} | {r['accuracy']:.2%} |"
                )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench pipeline", description=__doc__)
    parser.add_argument("--sizes", default="100000", help="comma-separated corpus sizes")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-drain3", action="store_true", help="skip the drain3 baseline")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]

    from deadletter.pipeline.schema import session

    WORK.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        started = time.perf_counter()
        spark = session(args.master, "deadletter-bench", {"spark.driver.memory": "2g"})
        session_seconds = round(time.perf_counter() - started, 2)
    spark.sparkContext.setLogLevel("ERROR")
    report: dict[str, Any] = {
        "master": args.master,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "seed": args.seed,
        "session_start_seconds": session_seconds,
        "runs": [],
    }
    try:
        warm_up = WORK / f"dead-{WARM_UP_SIZE}-{args.seed}.jsonl"
        if not warm_up.exists():
            write_jsonl(warm_up, WARM_UP_SIZE, args.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            report["first_job"] = run_spark(spark, warm_up, labels(warm_up))
        print(f"first job {report['first_job']}", flush=True)
        for size in sizes:
            path = WORK / f"dead-{size}-{args.seed}.jsonl"
            if not path.exists():
                write_jsonl(path, size, args.seed)
            truth = labels(path)
            row: dict[str, Any] = {"size": size}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                row["spark"] = run_spark(spark, path, truth)
            print(f"{size:>9} spark  {row['spark']}", flush=True)
            if not args.no_drain3:
                row["drain3"] = run_drain3(path, truth)
                print(f"{size:>9} drain3 {row['drain3']}", flush=True)
            report["runs"].append(row)
    finally:
        spark.stop()
    (RESULTS / "pipeline.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / "pipeline.md").write_text(markdown(report))
    print(markdown(report))
    return 0
