"""How often a canary catches a minority failure hidden inside a failure pattern.

    ./dev bench canary [--runs 20] [--size 1000] [--minority 20] [--canary 10]

Each run builds its own DLQ on a fresh SQLite store: SIZE dead letters of one pattern
(`The <*> is invalid <*>`), MINORITY of them `The repartition parameter 289 is invalid: cannot
be null.` placed at random (seeded by the run), the rest `The format is invalid: csv.` and
the like. It reports in how many runs a canary of CANARY would hold one of the minority, so
that the redrive pauses (tests/engine/test_canary_kinds.py runs the whole redrive): the first
CANARY of the DLQ, as the canary once took them, against the sample the engine draws across
the pattern's kinds (seeded by the run too).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from deadletter.clock import ManualClock
from deadletter.domain.model import DeadLetterFilter, NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.redrive import Canary
from deadletter.engine.engine import Engine
from deadletter.storage import open_store

P = "bench"
FORMATS = ("csv", "tsv", "xml", "yaml", "parquet", "avro", "orc", "json")
FAILING = "The repartition parameter 289 is invalid: cannot be null."


def _dlq(
    engine: Engine, rng: random.Random, size: int, minority: int
) -> tuple[list[str], set[str]]:
    """The DLQ's ids in its order, and those of the minority failure."""
    engine.create_queue(P, "dlq")
    policy = DeadLetterPolicy(target="dlq", max_claims=1)
    engine.create_queue(P, "a", settings=QueueSettings(dead_letter=policy))
    failing = [True] * minority + [False] * (size - minority)
    rng.shuffle(failing)
    runs: list[tuple[str, int]] = []
    for f in failing:
        if f:
            runs.append((FAILING, 1))
        elif runs and runs[-1][0] != FAILING:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((f"The format is invalid: {rng.choice(FORMATS)}.", 1))
    engine.send(P, "a", messages=[NewMessage(body=b"{}") for _ in range(size)])
    claim = engine.claim(P, "a", limit=size)
    held = iter(claim.messages)
    ids: list[str] = []
    bad: set[str] = set()
    for text, n in runs:
        pairs = [(next(held).id, claim.id) for _ in range(n)]
        moved = [m.id for m in engine.dead_letter(P, "a", held=pairs, error=text)]
        ids += moved
        if text == FAILING:
            bad.update(moved)
    pattern = {"id": "p", "template": "The <*> is invalid <*>", "message_ids": ids}
    engine.save_patterns(P, "dlq", found=[{**pattern, "count": len(ids)}])
    return ids, bad


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench canary", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--minority", type=int, default=20)
    parser.add_argument("--canary", type=int, default=10)
    args = parser.parse_args(argv)
    first = drawn = 0
    started = time.perf_counter()
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as folder:
            store = open_store(f"sqlite:///{Path(folder) / 'bench.db'}")
            try:
                engine = Engine(store, ManualClock())
                ids, bad = _dlq(engine, random.Random(run), args.size, args.minority)
                first += bool(bad & set(ids[: args.canary]))
                canary = Canary(count=args.canary, pattern_id="p", seed=run)
                where = DeadLetterFilter(pattern_id="p")
                task = engine.start_redrive(P, "dlq", where=where, canary=canary)
                assert task.canary is not None
                drawn += bool(bad & set(task.canary.plan))
            finally:
                store.close()
    print(
        f"{args.minority} of {args.size} failing, a canary of {args.canary}, {args.runs} runs"
        f" ({time.perf_counter() - started:.1f} s):\n"
        f"  the first {args.canary} of the DLQ hold one in {first} of {args.runs}\n"
        f"  the sample drawn across the pattern's kinds holds one in {drawn} of {args.runs}"
    )
    if task.canary.coverage:
        print(f"  last run: {task.canary.coverage}")
    return 0
