"""What one round of automatic redrive costs, and how long it holds the write lock.

    ./dev bench auto_redrive [--size 20000] [--runs 3] [--canary 1%] [--url sqlite:///...]

A DLQ of SIZE dead letters (on a fresh SQLite file, or the store at URL, which must be empty)
and a policy over all of them. Each run times the round's two parts as the worker runs them:
the survey, a read transaction that holds no lock, and the write transaction that claims the
round under the policy's row lock, marks the exhausted and starts the task (with `--canary`,
the canary's draw too). The task is cancelled and the round made due again between runs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from deadletter.clock import ManualClock
from deadletter.domain.auto_redrive import AutoRedriveSpec
from deadletter.domain.model import DeadLetterFilter, NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.redrive import Canary
from deadletter.engine import auto_redrive
from deadletter.engine.engine import Engine
from deadletter.engine.transactions import Pending
from deadletter.storage import open_store

P = "bench"
BATCH = 500


def _fill(engine: Engine, size: int) -> None:
    engine.create_queue(P, "dlq")
    policy = DeadLetterPolicy(target="dlq", max_claims=1)
    engine.create_queue(P, "a", settings=QueueSettings(dead_letter=policy))
    for start in range(0, size, BATCH):
        n = min(BATCH, size - start)
        engine.send(P, "a", messages=[NewMessage(body=b'{"n": 1}') for _ in range(n)])
        claim = engine.claim(P, "a", limit=n)
        engine.release_claim(P, "a", claim_id=claim.id)
        engine.claim(P, "a", limit=n)  # each at its limit: all move to the DLQ


def _canary(text: str | None) -> Canary | None:
    if text is None:
        return None
    if text.endswith("%"):
        return Canary(percent=float(text[:-1]))
    return Canary(count=int(text))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench auto_redrive")
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--canary", help="each round's canary: N or P%%")
    parser.add_argument("--url", help="an empty store (default: a fresh SQLite file)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(args.url or f"sqlite:///{Path(folder) / 'bench.db'}")
        try:
            clock = ManualClock()
            engine = Engine(store, clock)
            _fill(engine, args.size)
            spec = AutoRedriveSpec(filter=DeadLetterFilter(), interval=600, max_rounds=3,
                                   canary=_canary(args.canary))  # fmt: skip
            engine.put_auto_redrive(P, "dlq", spec=spec)
            surveys, writes = [], []
            for _ in range(args.runs):
                policy = engine.get_auto_redrive(P, "dlq")
                t0 = time.perf_counter()
                with store.read() as tx:
                    found = auto_redrive.survey(tx, policy, clock.now())
                t1 = time.perf_counter()
                with store.transaction() as tx:
                    auto_redrive.proceed(tx, Pending(), P, "dlq", found=found, now=clock.now())
                writes.append(time.perf_counter() - t1)
                surveys.append(t1 - t0)
                last = engine.get_auto_redrive(P, "dlq").last_round
                engine.stop_auto_redrive(P, "dlq")  # cancels the round's task
                if last is not None and last.task_id is not None:
                    engine.redrive_step(last.task_id, 1)  # which its next step ends
                engine.resume_auto_redrive(P, "dlq")
                clock.advance(1)
        finally:
            store.close()
    ms = [round(statistics.median(x) * 1000) for x in (surveys, writes)]
    print(
        f"{args.size} dead letters, canary {args.canary or 'none'}, {args.runs} runs:"
        f" survey (read, no lock) median {ms[0]} ms; the round's write transaction median"
        f" {ms[1]} ms"
    )
    return 0
