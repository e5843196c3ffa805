"""Wall and CPU seconds of the summary step alone, in a warm session, beside another version.

    ./dev bench summary [--size 100000] [--seed 1] [--rounds 3] [--against OTHER/analysis.py]

The bench corpus (as `./dev bench pipeline` writes it) goes through the analysis's one pass
once, cached, and its keys are mined; then `analysis.summarize_keys` (the stage `deadletter
analyze` announces as summarising the patterns, less `explain`) runs `--rounds` times,
alternating with the `summarize_keys` of the file given by `--against` (another version of
pipeline/analysis.py, loaded beside this one), and both must give the same patterns. The whole
job's stages move with the load of a shared machine; this step, timed in turns, less so.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from bench.pipeline_bench import WORK
from bench.proc import cpu_seconds
from deadletter.pipeline import analysis
from deadletter.pipeline.corpus import write_jsonl
from deadletter.pipeline.purity import explain


def _summarize_keys_of(path: str) -> Callable[..., list[dict[str, Any]]]:
    spec = importlib.util.spec_from_file_location("other_analysis", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    summarize: Callable[..., list[dict[str, Any]]] = module.summarize_keys
    return summarize


def _cpu_seconds() -> float:
    """CPU seconds of this process and every process under it (the JVM, its Python workers),
    from /proc: the load of other jobs inflates them far less than the wall clock."""
    return cpu_seconds(os.getpid()) or 0.0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench summary", description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", help="another version of pipeline/analysis.py")
    args = parser.parse_args(argv)
    from pyspark import StorageLevel

    from deadletter.pipeline.schema import read_export, session

    path = WORK / f"dead-{args.size}-{args.seed}.jsonl"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        write_jsonl(path, args.size, args.seed)
    versions = {"this": analysis.summarize_keys}
    if args.against:
        versions["other"] = _summarize_keys_of(args.against)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        spark = session("local[2]", "deadletter-bench", {"spark.driver.memory": "2g"})
        spark.sparkContext.setLogLevel("ERROR")
        try:
            df = read_export(spark, str(path)).repartition(2)
            keyed = df.transform(analysis.one_pass).persist(StorageLevel.MEMORY_AND_DISK)
            groups = keyed.transform(analysis.key_groups).collect()
            texts = keyed.transform(analysis.key_texts).collect()
            mined = analysis.mined_keys(groups, texts)
            variables = explain(mined.found, mined.counts)
            print(f"load average {os.getloadavg()}; {args.size:,} dead letters")
            results: dict[str, Any] = {}
            for round_ in range(args.rounds):
                for name, summarize in versions.items():
                    started, cpu = time.perf_counter(), _cpu_seconds()
                    patterns = summarize(keyed, groups, texts, mined, variables)
                    seconds, cpu = time.perf_counter() - started, _cpu_seconds() - cpu
                    print(f"round {round_ + 1}: {name} {seconds:.2f} s, {cpu:.2f} s CPU")
                    results.setdefault(name, patterns)
            same = all(p == results["this"] for p in results.values())
            print(f"same patterns: {same}; load average {os.getloadavg()}")
        finally:
            spark.stop()
    return 0
