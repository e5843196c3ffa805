"""CPU seconds of each part of the in-process engine's reading of a JSON-lines export, in this
process: where `deadletter analyze` (engine auto) spends its time.

    ./dev bench local_parts [--size 80000] [--seed 1] [--rounds 2]

The bench corpus (`./dev bench pipeline` writes it under bench/work/pipeline) is read block by
block (pipeline/reader.py) and each part is timed alone with `time.process_time`, the cyclic
garbage collector off as the command runs: splitting, decoding, the checks, the times, the
texts' digit classes, the bodies' shape keys, the attributes, the counting (masking the
distinct texts and grouping) and merging of each block (tally.py), then the summary and the
outputs (local_summary.py). The first round starts with every cache empty (a fresh command);
the next ones find them full (the bench pipeline's second and third runs). One process: the
helper `analyze` may fork is left out.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.pipeline_bench import WORK
from deadletter.pipeline import body_keys, reader, tally
from deadletter.pipeline.corpus import write_jsonl
from deadletter.pipeline.local_summary import summarise


def _quiet(_stage: str) -> None:
    pass


def _round(path: Path) -> dict[str, float]:
    seconds: dict[str, float] = {}

    def timed(part: str, run: Callable[..., Any], *args: Any) -> Any:
        started = time.process_time()
        out = run(*args)
        seconds[part] = seconds.get(part, 0.0) + time.process_time() - started
        return out

    counts = tally.Tally()
    for first, offset, data in timed("splitting into blocks", list, reader.blocks(path)):
        counts.starts.append((first, offset))
        timed("each line one JSON object", reader._one_object_a_line, data)
        lines = timed("decoding (msgspec)", reader._LINES, data)
        for name in ("dead_lettered_at", "enqueued_at"):
            timed("times (Arrow)", reader._times, [getattr(line, name) for line in lines])
        for name in ("error", "description", "error_class"):
            column = [getattr(line, name) for line in lines]
            timed("texts' digit classes", reader._digit_classes, column)
        spaced = timed("body shapes", body_keys.body_style, data)
        timed("body shapes", body_keys.shape_keys, [line.body for line in lines], spaced)
        timed("attributes", reader._attributes, [line.attributes for line in lines])
        block = reader.read_block(first, data)
        counted = timed("counting (masking, grouping)", tally.count_block, block)
        timed("merging the blocks", counts.add, counted)
    with tempfile.TemporaryDirectory() as out:
        timed(
            "summary and outputs",
            partial(summarise, threshold=0.5, keep_assignments=False, post=None, say=_quiet),
            counts,
            path,
            Path(out),
        )
    return seconds


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench local_parts", description=__doc__)
    parser.add_argument("--size", type=int, default=80_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    path = WORK / f"dead-{args.size}-{args.seed}.jsonl"
    if not path.exists():
        write_jsonl(path, args.size, args.seed)
    gc.disable()
    rounds = [_round(path) for _ in range(args.rounds)]
    print(f"{args.size:,} dead letters, load average {os.getloadavg()[0]:.1f}; CPU s per round")
    for part in rounds[0]:
        print(f"{part:<32}" + "".join(f"{r[part]:>8.2f}" for r in rounds))
    print(f"{'all parts':<32}" + "".join(f"{sum(r.values()):>8.2f}" for r in rounds))
    return 0
