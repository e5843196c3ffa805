"""`deadletter analyze` (engine auto) against drain3's read-and-mine of the same export, and
the whole analysis job on Spark.

    ./dev bench pipeline [--sizes 80000,1000000] [--runs 3] [--master local[2]] [--seed 1]
                         [--no-drain3] [--no-spark] [--local-up-to N] [--reading]
                         [--spark-input parquet|jsonl] [--out bench/results/pipeline]

Each size runs `deadletter analyze --input FILE` (engine auto, in this process: its whole
command path, the interpreter's start left out) and drain3 (one thread, reading the export's
texts and mining them) `--runs` times each, taking turns, and shows each one's median and
their ratio: the machine may be loaded by others, so only runs in the same window compare.
    ./dev bench pipeline --real [--tuning-only]
    ./dev bench pipeline --first-run

`--first-run` times `deadletter analyze` as a person runs it, one fresh process per run, on
0, 100 and 5,000 dead letters with each engine (in this process, and Spark): the whole
command, imports and JVM start included.

`--real` measures grouping quality instead, on real labelled log lines that no one here wrote
(tests/data/logs, from Loghub; see `run_real`) and on the real error-message formats of
fourteen Python packages filled with values (tests/data/formats; see `run_formats`), each in
a tuning half and a held-out half.

A small job runs first and is timed on its own: it pays for the JVM warming up and the Python
workers starting, which every fresh session (one `deadletter analyze` run) pays once. The
sizes are then timed in that warm session.

Writes bench/results/pipeline.json and bench/results/pipeline.md (`--out` names another
place; `--real`:
bench/results/pipeline-real.json and .md).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from deadletter.pipeline.corpus import (
    adjusted_rand_index,
    f1_grouping,
    grouping_accuracy,
    write_jsonl,
)
from deadletter.pipeline.outputs import read_assignments

HERE = Path(__file__).parent
WORK = HERE / "work" / "pipeline"
RESULTS = HERE / "results"
WARM_UP_SIZE = 5000
LOGS = HERE.parent / "tests" / "data" / "logs"
# The systems the miner was tuned on; the others are held out: their results are read only to
# report. HELD_OUT was read once tuning was over, and once more after the one change it led to
# (docs/pipeline.md says which); FRESH was added after that change and read once.
TUNING = ("Apache", "HDFS", "HealthApp", "Mac", "OpenStack", "Spark", "Zookeeper")
HELD_OUT = ("BGL", "Hadoop", "Linux", "OpenSSH", "Proxifier", "Thunderbird")
FRESH = ("Android", "HPC", "Windows")
# drain3's own example masks (its drain3.ini): what "drain3 with standard masks" means here.
DRAIN3_MASKS = [
    (r"((?<=[^A-Za-z0-9])|^)(([0-9a-f]{2,}:){3,}([0-9a-f]{2,}))((?=[^A-Za-z0-9])|$)", "ID"),
    (r"((?<=[^A-Za-z0-9])|^)(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})((?=[^A-Za-z0-9])|$)", "IP"),
    (r"((?<=[^A-Za-z0-9])|^)([0-9a-f]{6,} ?){3,}((?=[^A-Za-z0-9])|$)", "SEQ"),
    (r"((?<=[^A-Za-z0-9])|^)([0-9A-F]{4} ?){4,}((?=[^A-Za-z0-9])|$)", "SEQ"),
    (r"((?<=[^A-Za-z0-9])|^)(0x[a-f0-9A-F]+)((?=[^A-Za-z0-9])|$)", "HEX"),
    (r"((?<=[^A-Za-z0-9])|^)([\-\+]?\d+)((?=[^A-Za-z0-9])|$)", "NUM"),
]


def labels(path: Path) -> dict[str, str]:
    out = {}
    with path.open() as fh:
        for line in fh:
            r = json.loads(line)
            out[r["message_id"]] = r["label"]
    return out


def parquet_of(path: Path) -> Path:
    """The corpus as `deadletter dlq export --format parquet` writes it (made once), each
    nested body as the JSON text of its line (the corpus writes it compact)."""
    from deadletter.pipeline.exports import write_parquet

    out = path.with_suffix(".parquet")
    if not out.exists():

        def pages() -> Any:
            with path.open() as fh:
                page: list[dict[str, Any]] = []
                for line in fh:
                    record = json.loads(line)
                    if isinstance(record["body"], dict | list):
                        record["body"] = json.dumps(record["body"], separators=(",", ":"))
                    page.append(record)
                    if len(page) == 1000:
                        yield page
                        page = []
                yield page

        write_parquet(pages(), out)
    return out


def _digest(out: Path) -> str:
    """What must be equal between the engines: the summary files, and each dead letter's
    pattern (assignments.jsonl, whose order is the engine's own, sorted)."""
    import hashlib

    digest = hashlib.sha256()
    for name in ("patterns.json", "patterns.parquet", "report.html"):
        digest.update((out / name).read_bytes())
    digest.update(b"".join(sorted((out / "assignments.jsonl").read_bytes().splitlines())))
    return digest.hexdigest()


def run_spark(spark: Any, path: Path, truth: dict[str, str]) -> dict[str, Any]:
    from deadletter.pipeline.analysis import analyze

    out = WORK / f"report-{path.stem}"
    shutil.rmtree(out, ignore_errors=True)
    stages: list[list[Any]] = []
    started = time.perf_counter()

    def heard(stage: str) -> None:
        """Each stage's time: from its own announcement to the next one's (or the end)."""
        now = time.perf_counter()
        if stages:
            stages[-1][1] = round(now - stages[-1][1], 2)
        stages.append([re.sub(r"[\d,]+ ", "N ", stage), now])

    result = analyze(str(path), out, spark=spark, progress=heard)
    seconds = time.perf_counter() - started
    heard("reading back the assignments")
    assignments = read_assignments(out / "assignments.jsonl")
    stages.pop()
    return {
        "input": path.suffix.lstrip("."),
        "seconds": round(seconds, 2),
        "per_second": round(len(truth) / seconds),
        "patterns": len(result.patterns),
        "accuracy": round(grouping_accuracy(truth, assignments), 4),
        "stages": stages,
        "outputs": _digest(out),
    }


def run_reading(spark: Any, path: Path) -> dict[str, Any]:
    """The floors under `run_spark` on this file.

    Reading the export alone, with no masking or mining: every column materialised (a no-op
    sink), and the text columns the analysis masks handed to Python in Arrow batches (as its
    pandas UDF gets them) and dropped there. Then the job's first stage as `analyze` runs it
    (its one pass, cached, and the two aggregations over the cache) with the masking function
    replaced by one that masks nothing and gives every dead letter one key: what that stage
    costs besides masking.
    """
    from pyspark import StorageLevel

    from deadletter.pipeline.analysis import key_groups, key_texts, one_pass, spread
    from deadletter.pipeline.schema import read_export

    started = time.perf_counter()
    read_export(spark, path).write.format("noop").mode("overwrite").save()
    all_columns = time.perf_counter() - started
    texts = read_export(spark, path).select("message_id", "error", "description", "error_class")
    started = time.perf_counter()
    texts.mapInArrow(lambda batches: (b.slice(0, 0) for b in batches), texts.schema).count()
    to_python = time.perf_counter() - started

    def one_key(
        message_id: pd.Series, error: pd.Series, description: pd.Series, error_class: pd.Series
    ) -> pd.DataFrame:
        # Nested, so that Spark sends it to its Python workers by value; its type hints tell
        # Spark the kind of UDF, as batches.keyed's do.
        n = len(message_id)
        first = [True] + [False] * (n - 1)
        text = ["" if f else None for f in first]
        return pd.DataFrame(
            {
                "mask_key": pd.Series([0] * n, dtype="int64"),
                "signature": text,
                "tokens_text": text,
                "context_text": text,
                "sample": first,
            }
        )

    started = time.perf_counter()
    keyed = (
        spread(read_export(spark, path))
        .transform(one_pass, one_key)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        keyed.transform(key_groups).collect()
        keyed.transform(key_texts).collect()
    finally:
        keyed.unpersist()
    unmasked = time.perf_counter() - started
    return {
        "all_columns_seconds": round(all_columns, 2),
        "to_python_seconds": round(to_python, 2),
        "first_stage_unmasked_seconds": round(unmasked, 2),
    }


def run_local(path: Path, truth: dict[str, str]) -> dict[str, Any]:
    """`deadletter analyze --input FILE` as a person runs it (engine auto, every output), in
    this process: the command's whole path (the input's check, the engine's choice, the
    analysis), the interpreter's start and imports left out as they are for drain3. Its
    stages as the command announces them, and the CPU seconds of this process and its
    workers."""
    from click.testing import CliRunner

    from deadletter.cli.main import main as cli

    out = WORK / f"local-{path.stem}"
    shutil.rmtree(out, ignore_errors=True)
    cpu = _cpu_seconds()
    started = time.perf_counter()
    done = CliRunner().invoke(
        cli,
        ["analyze", "--input", str(path), "--out", str(out)],
        env={"DEADLETTER_ANALYZE_ENGINE": "auto"},
    )
    seconds = time.perf_counter() - started
    cpu = _cpu_seconds() - cpu
    if done.exit_code != 0:
        raise RuntimeError(done.output)
    assignments = read_assignments(out / "assignments.jsonl")
    return {
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "per_second": round(len(truth) / seconds),
        "patterns": len(json.loads((out / "patterns.json").read_text())["patterns"]),
        "accuracy": round(grouping_accuracy(truth, assignments), 4),
        "engine": "in this process" if "in this process" in done.stderr else "spark",
        "stages": _stages(done.stderr, seconds),
        "outputs": _digest(out),
    }


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (the workers)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _stages(told: str, seconds: float) -> list[list[Any]]:
    """Each stage the command announced (`[  1.2s] masking`) with its seconds until the next."""
    marks = [
        (float(m.group(1)), re.sub(r"[\d,]+ ", "N ", m.group(2)))
        for m in re.finditer(r"^\[\s*([\d.]+)s\] (.*)$", told, re.M)
    ]
    return [
        [name, round((marks[i + 1][0] if i + 1 < len(marks) else seconds) - at, 2)]
        for i, (at, name) in enumerate(marks)
        if name != "done"
    ]


FIRST_RUN_SIZES = (0, 100, 5000)


def main_first_run(seed: int) -> int:
    """Each size and engine as a fresh `deadletter analyze` process, timed from outside."""
    import subprocess
    import sys

    WORK.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    load = list(os.getloadavg())
    rows = []
    for size in FIRST_RUN_SIZES:
        path = WORK / f"dead-{size}-{seed}.jsonl"
        if not path.exists():
            write_jsonl(path, size, seed)
        row: dict[str, Any] = {"size": size}
        for engine in ("local", "spark"):
            out = WORK / f"first-run-{engine}-{size}"
            shutil.rmtree(out, ignore_errors=True)
            started = time.perf_counter()
            done = subprocess.run(
                [
                    *(sys.executable, "-m", "deadletter", "analyze", "--input", str(path)),
                    *("--out", str(out), "--engine", engine, "--master", "local[2]"),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            row[engine] = round(time.perf_counter() - started, 2)
            row[f"{engine}_stages"] = done.stderr.splitlines()
            print(f"{size:>6} {engine:<5} {row[engine]} s", flush=True)
        same = all(
            (WORK / f"first-run-local-{size}" / name).read_bytes()
            == (WORK / f"first-run-spark-{size}" / name).read_bytes()
            for name in ("patterns.json", "patterns.parquet", "report.html")
        )
        row["same_outputs"] = same
        rows.append(row)
    load += list(os.getloadavg())
    lines = [
        f"`deadletter analyze --input FILE` as a fresh process (Python {platform.python_version()},"
        f" {os.cpu_count()} CPUs, Spark local[2]), seconds from start to exit:",
        "",
        "| dead letters | in this process | Spark | same patterns.json, .parquet, report.html |",
        "|---:|---:|---:|---|",
    ]
    for r in rows:
        same = "yes" if r["same_outputs"] else "NO"
        lines.append(f"| {r['size']:,} | {r['local']} | {r['spark']} | {same} |")
    spark_stages = rows[-1]["spark_stages"]
    lines += ["", f"Spark's stages at {rows[-1]['size']:,}:", "", "```", *spark_stages, "```"]
    lines += [
        "",
        "Load average (1, 5, 15 min) before and after: "
        + ", ".join(f"{x:.2f}" for x in load)
        + ".",
    ]
    text = "\n".join(lines) + "\n"
    (RESULTS / "pipeline-first-run.json").write_text(json.dumps(rows, indent=2) + "\n")
    (RESULTS / "pipeline-first-run.md").write_text(text)
    print(text)
    return 0


def run_drain3(path: Path, truth: dict[str, str]) -> dict[str, Any]:
    """drain3 with stock settings on the flattened error text, one thread, mining only."""
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()
    config.profiling_enabled = False
    miner = TemplateMiner(config=config)
    texts: list[tuple[str, str]] = []
    cpu = time.process_time()
    reading = time.perf_counter()
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
        # Reading the export's texts too, as the analysis must.
        "read_and_mine_seconds": round(time.perf_counter() - reading, 2),
        "read_and_mine_cpu_seconds": round(time.process_time() - cpu, 2),
        "per_second": round(len(texts) / seconds),
        "patterns": len(miner.drain.clusters),
        "accuracy": round(grouping_accuracy(truth, predicted), 4),
    }


def read_log(path: Path) -> tuple[list[str], list[str]]:
    """(contents, event ids) of one labelled log file."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r["Content"] for r in rows], [r["EventId"] for r in rows]


def ours_on(contents: list[str]) -> list[str]:
    """Each line as the description of a dead letter, through the job's own functions."""
    from deadletter.pipeline.batches import assign
    from deadletter.pipeline.mining import DEFAULT_THRESHOLD

    return assign([None] * len(contents), contents, DEFAULT_THRESHOLD)


def drain3_on(contents: list[str]) -> list[str]:
    """drain3 with its default settings and its example masks, trained then matched."""
    from drain3 import TemplateMiner
    from drain3.masking import MaskingInstruction
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()
    config.profiling_enabled = False
    config.masking_instructions = [MaskingInstruction(p, name) for p, name in DRAIN3_MASKS]
    miner = TemplateMiner(config=config)
    for text in contents:
        miner.add_log_message(text)
    out = []
    for text in contents:
        cluster = miner.match(text)
        out.append(str(cluster.cluster_id if cluster else -1))
    return out


def scores(truth: list[str], predicted: list[str]) -> dict[str, float]:
    t = {str(i): label for i, label in enumerate(truth)}
    p = {str(i): label for i, label in enumerate(predicted)}
    return {
        "GA": round(grouping_accuracy(t, p), 4),
        "FGA": round(f1_grouping(t, p), 4),
        "ARI": round(adjusted_rand_index(t, p), 4),
    }


def run_real(systems: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = []
    for name in systems:
        contents, truth = read_log(LOGS / f"{name}.csv")
        rows.append(
            {
                "system": name,
                "lines": len(contents),
                "events": len(set(truth)),
                "ours": scores(truth, ours_on(contents)),
                "drain3": scores(truth, drain3_on(contents)),
            }
        )
    return rows


def run_formats(half: str) -> list[dict[str, Any]]:
    """The error-format corpus's half, one queue per package (tests/pipeline/error_formats.py)."""
    from tests.pipeline.error_formats import generate

    rows = []
    for package, (messages, truth) in generate(half).items():
        rows.append(
            {
                "system": package,
                "lines": len(messages),
                "events": len(set(truth)),
                "ours": scores(truth, ours_on(messages)),
                "drain3": scores(truth, drain3_on(messages)),
            }
        )
    return rows


def real_markdown(halves: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for half, rows in halves.items():
        lines += [
            f"{half}:",
            "",
            "| system | lines | events | GA ours | GA drain3 | FGA ours | FGA drain3 "
            "| ARI ours | ARI drain3 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in rows:
            o, d = r["ours"], r["drain3"]
            lines.append(
                f"| {r['system']} | {r['lines']} | {r['events']} | {o['GA']:.3f} | "
                f"{d['GA']:.3f} | {o['FGA']:.3f} | {d['FGA']:.3f} | {o['ARI']:.3f} | "
                f"{d['ARI']:.3f} |"
            )
        mean = {
            (who, m): sum(r[who][m] for r in rows) / len(rows)
            for who in ("ours", "drain3")
            for m in ("GA", "FGA", "ARI")
        }
        lines.append(
            f"| **average** | | | **{mean['ours', 'GA']:.3f}** | {mean['drain3', 'GA']:.3f} | "
            f"**{mean['ours', 'FGA']:.3f}** | {mean['drain3', 'FGA']:.3f} | "
            f"**{mean['ours', 'ARI']:.3f}** | {mean['drain3', 'ARI']:.3f} |"
        )
        lines.append("")
    return "\n".join(lines)


def main_real(tuning_only: bool) -> int:
    halves = {
        "Tuning systems": run_real(TUNING),
        "Error formats, tuning half": run_formats("tuning"),
    }
    if not tuning_only:
        halves = {
            "Held-out systems": run_real(HELD_OUT),
            "Held-out systems added after the last change": run_real(FRESH),
            "All held-out systems": run_real(HELD_OUT + FRESH),
            "Error formats, held-out half": run_formats("held-out"),
            **halves,
        }
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = real_markdown(halves)
    if not tuning_only:
        (RESULTS / "pipeline-real.json").write_text(json.dumps(halves, indent=2) + "\n")
        (RESULTS / "pipeline-real.md").write_text(text)
    print(text)
    return 0


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Pipeline benchmark ({report['master']}, {report['cpus']} CPUs, "
        f"Python {report['python']}, seed {report['seed']})",
        "",
        *(
            [
                f"Starting the Spark session took {report['session_start_seconds']} s and its"
                f" first job ({WARM_UP_SIZE:,} dead letters) {report['first_job']['seconds']} s"
                " (JVM warm-up, Python workers starting): a fresh session, such as one"
                " `deadletter analyze` run, pays both once. The sizes below then ran in that"
                " warm session.",
                "",
            ]
            if report.get("first_job")
            else []
        ),
        "| dead letters | engine | seconds | dead letters/s | patterns | grouping accuracy |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    names = {
        "spark": f"deadletter analyze (Spark {report['master']}, whole job)",
        "local": "deadletter analyze (engine auto, whole job)",
        "drain3": "drain3 0.9 (1 thread, mining only)",
    }
    for row in report["runs"]:
        for engine, name in names.items():
            r = row.get(engine)
            if r:
                lines.append(
                    f"| {row['size']:,} | {name} | {r['seconds']} | {r['per_second']:,} | "
                    f"{r['patterns']} | {r['accuracy']:.2%} |"
                )
    lines += _spark_versus(report["runs"])
    versus = [row for row in report["runs"] if row.get("local") and row.get("drain3")]
    if versus:
        lines += [
            "",
            "`deadletter analyze --input FILE` (engine auto, every output; the interpreter's"
            " start and imports left out) against drain3 reading the same export and mining its"
            " texts in one thread, taking turns in the same window: median seconds (all runs),"
            " and the ratio drain3 / analyze (above 1: analyze is faster):",
            "",
            "| dead letters | analyze, s | drain3 read and mine, s | ratio | analyze CPU s |"
            " drain3 CPU s | engine |",
            "|---:|---:|---:|---:|---:|---:|---|",
        ]
        for row in versus:
            ours, theirs = row["local"], row["drain3"]
            lines.append(
                f"| {row['size']:,} | {ours['seconds']} ({_all(ours)}) |"
                f" {theirs['read_and_mine_seconds']} ({_all(theirs)}) |"
                f" {theirs['read_and_mine_seconds'] / ours['seconds']:.2f} |"
                f" {ours['cpu_seconds']} | {theirs['read_and_mine_cpu_seconds']} |"
                f" {ours['engine']} |"
            )
        largest_local = max(versus, key=lambda row: row["size"])
        lines += [
            "",
            f"Where `deadletter analyze`'s time went at {largest_local['size']:,} (its median"
            " run, each stage as it announces it, until the next):",
            "",
            "| stage | seconds |",
            "|---|---:|",
            *(f"| {name} | {secs} |" for name, secs in largest_local["local"]["stages"]),
        ]
    read = [row for row in report["runs"] if row.get("reading")]
    if read:
        lines += [
            "",
            "Floors, in the same session (`--reading`): the export parsed with every column"
            " materialised; its text columns handed to Python in Arrow batches; and the job's"
            " first stage (its one pass, cached, and the two aggregations over it) with masking"
            " that masks nothing:",
            "",
            "| dead letters | every column, s | text columns to Python, s |"
            " first stage, no masking, s |",
            "|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {row['size']:,} | {row['reading']['all_columns_seconds']} |"
            f" {row['reading']['to_python_seconds']} |"
            f" {row['reading'].get('first_stage_unmasked_seconds', '')} |"
            for row in read
        ]
    largest = max(report["runs"], key=lambda row: row["size"], default=None)
    if largest and largest.get("spark", {}).get("stages"):
        lines += [
            "",
            f"Where the time went at {largest['size']:,} (each stage as `deadletter analyze` "
            "announces it, until the next):",
            "",
            "| stage | seconds |",
            "|---|---:|",
        ]
        lines += [f"| {name} | {secs} |" for name, secs in largest["spark"]["stages"]]
    if report.get("load_average"):
        load = ", ".join(f"{x:.2f}" for x in report["load_average"])
        lines += ["", f"Load average (1, 5, 15 min) before and after: {load}."]
    return "\n".join(lines) + "\n"


def _spark_versus(runs: list[dict[str, Any]]) -> list[str]:
    """The Spark job's time over drain3's (mining alone, and reading and mining) from the same
    window, and whether it wrote what `deadletter analyze` (auto) wrote."""
    rows = [row for row in runs if row.get("spark") and row.get("drain3")]
    if not rows:
        return []
    lines = [
        "",
        "The Spark job (its input as read) over drain3 in the same window, and whether it wrote"
        " the same patterns.json, patterns.parquet, report.html and assignments as"
        " `deadletter analyze` (auto):",
        "",
        "| dead letters | Spark input | Spark, s | / drain3 mining | / drain3 read and mine |"
        " same outputs |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for row in rows:
        ours, theirs = row["spark"], row["drain3"]
        local = row.get("local", {}).get("outputs")
        same = "" if local is None else ("yes" if local == ours["outputs"] else "NO")
        lines.append(
            f"| {row['size']:,} | {ours['input']} | {ours['seconds']} |"
            f" {ours['seconds'] / theirs['seconds']:.2f} |"
            f" {ours['seconds'] / theirs['read_and_mine_seconds']:.2f} | {same} |"
        )
    return lines


def _all(result: dict[str, Any]) -> str:
    return ", ".join(str(x) for x in result["all_seconds"])


def _run_sizes(spark: Any, sizes: list[int], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each size through Spark (unless `--no-spark`), the in-process engine and drain3."""
    runs: list[dict[str, Any]] = []
    for size in sizes:
        path = WORK / f"dead-{size}-{args.seed}.jsonl"
        if not path.exists():
            write_jsonl(path, size, args.seed)
        truth = labels(path)
        row: dict[str, Any] = {"size": size}
        if spark is not None:
            source = parquet_of(path) if args.spark_input == "parquet" else path
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                row["spark"] = run_spark(spark, source, truth)
            print(f"{size:>9} spark  {row['spark']}", flush=True)
        if args.reading and spark is not None:
            row["reading"] = run_reading(spark, path)
            print(f"{size:>9} read   {row['reading']}", flush=True)
        row.update(_versus(path, truth, size, args))
        runs.append(row)
    return runs


def _versus(
    path: Path, truth: dict[str, str], size: int, args: argparse.Namespace
) -> dict[str, Any]:
    """`deadletter analyze` (auto) and drain3's read-and-mine, `--runs` times each, taking
    turns in the same window (the first of each pair alternates): each one's median run."""
    sides: dict[str, list[dict[str, Any]]] = {}
    takers = {
        "local": run_local if size <= args.local_up_to else None,
        "drain3": None if args.no_drain3 else run_drain3,
    }
    order = [name for name, run in takers.items() if run is not None]
    for n in range(args.runs):
        for name in order if n % 2 == 0 else order[::-1]:
            result = takers[name](path, truth)  # type: ignore[misc]
            sides.setdefault(name, []).append(result)
            print(f"{size:>9} {name:<6} {result}", flush=True)
    key = {"local": "seconds", "drain3": "read_and_mine_seconds"}
    out: dict[str, Any] = {}
    for name, results in sides.items():
        ranked = sorted(results, key=lambda r: r[key[name]])
        median = dict(ranked[(len(ranked) - 1) // 2])
        median["all_seconds"] = [r[key[name]] for r in results]
        out[name] = median
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench pipeline", description=__doc__)
    parser.add_argument("--sizes", default="80000,1000000", help="comma-separated corpus sizes")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-drain3", action="store_true", help="skip the drain3 baseline")
    parser.add_argument(
        "--no-spark", action="store_true", help="the in-process engine and drain3 alone"
    )
    parser.add_argument(
        "--local-up-to",
        type=int,
        default=10**9,
        help="run `deadletter analyze` (engine auto) on sizes up to this (0: never)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="runs of `deadletter analyze` and of drain3 each, taking turns (medians shown)",
    )
    parser.add_argument(
        "--spark-input",
        choices=["parquet", "jsonl"],
        default="parquet",
        help="the export the Spark job reads (a Parquet copy of the corpus is made once)",
    )
    parser.add_argument(
        "--out",
        default=str(RESULTS / "pipeline"),
        help="where the results go: OUT.json and OUT.md (default bench/results/pipeline)",
    )
    parser.add_argument(
        "--reading",
        action="store_true",
        help="also time the floors: reading each export alone, and the first stage without"
        " masking (run_reading)",
    )
    parser.add_argument("--first-run", action="store_true", help="fresh `deadletter analyze` runs")
    parser.add_argument("--real", action="store_true", help="grouping quality on real logs")
    parser.add_argument(
        "--tuning-only", action="store_true", help="with --real: the tuning systems alone"
    )
    args = parser.parse_args(argv)
    if args.real:
        return main_real(args.tuning_only)
    if args.first_run:
        return main_first_run(args.seed)
    sizes = [int(s) for s in args.sizes.split(",") if s]

    WORK.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    spark: Any = None
    session_seconds = 0.0
    if not args.no_spark:
        from deadletter.pipeline.schema import session

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
        "load_average": list(os.getloadavg()),
    }
    try:
        warm_up = WORK / f"dead-{WARM_UP_SIZE}-{args.seed}.jsonl"
        if not warm_up.exists():
            write_jsonl(warm_up, WARM_UP_SIZE, args.seed)
        if spark is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                report["first_job"] = run_spark(spark, warm_up, labels(warm_up))
            print(f"first job {report['first_job']}", flush=True)
        report["runs"] = _run_sizes(spark, sizes, args)
    finally:
        if spark is not None:
            spark.stop()
    report["load_average"] += list(os.getloadavg())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_name(out.name + ".json").write_text(json.dumps(report, indent=2) + "\n")
    out.with_name(out.name + ".md").write_text(markdown(report))
    print(markdown(report))
    return 0
