"""CPU time of the batch function the analysis runs on Spark's Python workers, without Spark.

    ./dev bench masking [--size 100000] [--seed 1] [--batch 10000] [--rounds 5]

The bench corpus (pipeline/corpus.py, as `./dev bench pipeline` writes it) goes through
`batches.keyed` (what the analysis's pandas UDF runs) in batches of `--batch` rows, as Spark
sends them, and `time.process_time` times each round: CPU time, which other jobs on the
machine do not inflate as they do the wall clock. Each round starts with the token caches
empty (`text.clear_caches`), as a fresh Python worker does. Then, apart, the two halves of
that cost: reading every error (text.mining_parts) and tokenising each distinct text once
(text.tokenize).

The digest printed last covers every output row: run this with another version of the code
(`PYTHONPATH=<other tree>/src:. python -m bench masking`) and the two digests are equal when
the outputs are.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time

import pandas as pd

from deadletter.pipeline import batches, text
from deadletter.pipeline.corpus import generate

Columns = tuple[list[str], list[str | None], list[str | None], list[None]]


def _columns(size: int, seed: int) -> Columns:
    """The message ids, errors, descriptions and (absent) error classes of the corpus."""
    ids: list[str] = []
    errors: list[str | None] = []
    descriptions: list[str | None] = []
    for record in generate(size, seed):
        ids.append(record["message_id"])
        errors.append(record["error"])
        descriptions.append(record["description"])
    return ids, errors, descriptions, [None] * size


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench masking", description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    ids, errors, descriptions, classes = _columns(args.size, args.seed)
    frames = [
        (
            pd.Series(ids[i : i + args.batch], dtype=object),
            pd.Series(errors[i : i + args.batch], dtype=object),
            pd.Series(descriptions[i : i + args.batch], dtype=object),
            pd.Series(classes[i : i + args.batch], dtype=object),
        )
        for i in range(0, args.size, args.batch)
    ]
    print(f"load average {os.getloadavg()}; {args.size:,} dead letters, batches of {args.batch:,}")
    digest = ""
    times = []
    for round_ in range(args.rounds):
        text.clear_caches()
        h = hashlib.sha256()
        seconds = 0.0
        for frame in frames:
            # Each batch timed alone and hashed once its clock stops: the outputs are not
            # all kept, as a worker does not keep them (more live objects, dearer collections).
            started = time.process_time()
            out = batches.keyed(*frame)
            seconds += time.process_time() - started
            for row in out.itertuples(index=False):
                h.update("\x1f".join(map(str, row)).encode())
                h.update(b"\x1e")
        times.append(seconds)
        digest = h.hexdigest()
        per_row = seconds / args.size * 1e6
        print(f"round {round_ + 1}: batches.keyed {seconds:.2f} s CPU, {per_row:.1f} us a row")
    best = min(times)
    print(f"best round: {best:.2f} s CPU, {best / args.size * 1e6:.1f} us a row")
    started = time.process_time()
    parts = [text.mining_parts(e, d, None) for e, d in zip(errors, descriptions, strict=True)]
    print(f"text.mining_parts on every row: {time.process_time() - started:.2f} s CPU")
    distinct = sorted({p[1] for p in parts} | {p[2] for p in parts if p[2]})
    text.clear_caches()
    started = time.process_time()
    for line in distinct:
        text.tokenize(line)
    seconds = time.process_time() - started
    print(f"text.tokenize on {len(distinct):,} distinct texts: {seconds:.2f} s CPU")
    print(f"digest of the outputs: {digest}")
    return 0
