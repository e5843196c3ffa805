"""`deadletter analyze --follow`: a DLQ's stored patterns kept current from the streaming
source, in agreement with the batch analysis, resumable from a checkpoint, and alerting on a
new failure through the DLQ's webhook subscriptions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from deadletter.api.app import build_app
from deadletter.engine.deliveries import Deliveries, DeliverySettings
from deadletter.engine.engine import Engine
from deadletter.engine.subscriptions import RetryPolicy
from deadletter.pipeline.datasource import DeadLetterStreamReader
from deadletter.pipeline.follow import (
    Follower,
    TooLarge,
    follow_local,
    follow_spark,
    minute_counts,
    rate_per_minute,
    row_dict,
)
from deadletter.pipeline.local import analyze_local, export_dlq
from deadletter.pipeline.remote import put_patterns
from deadletter.storage import open_store
from tests.engine.helpers import P, send, with_dlq
from tests.pipeline.conftest import PANDAS_WARNING
from tests.support.receivers import WAIT, allow_local, receiving
from tests.support.servers import serving

FAST = DeliverySettings(retry=RetryPolicy(retries=2, backoff=0.01), timeout=WAIT, tick=0.01)
# What the batch analysis and the follow both say of a pattern.
COMPARED = ("id", "template", "signature", "count", "first_seen", "last_seen", "message_ids")

# Three kinds of failure, then a fourth that starts later; numbers vary, as in real errors.
KINDS = {
    "timeout": "TimeoutError: payments did not answer after {n} ms",
    "key": "KeyError: 'customer_id' in order {n}",
    "refused": "ConnectionRefusedError: [Errno 111] connect to db-{n}:5432 refused",
    "currency": "ValueError: unknown currency code for order {n}",
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Engine, str]]:
    """A server (notifying webhooks on loopback) whose "orders" dead-letters into "dlq"."""
    engine = Engine(open_store(f"sqlite:///{tmp_path / 'deadletter.db'}"))
    with_dlq(engine, "orders", "dlq", max_claims=5)
    deliveries = Deliveries(engine, allow_local(engine), FAST)
    with serving(build_app(engine, background=[deliveries])) as url:
        yield engine, url
    engine.store.close()


def kill(engine: Engine, kind: str, count: int) -> list[str]:
    """`count` messages that a consumer dead-letters with the error of `kind`."""
    messages = send(engine, "orders", *(f'{{"order": {i}}}' for i in range(count)))
    claim = engine.claim(P, "orders", limit=1000)
    ids = []
    for i, m in enumerate(messages):
        (dead,) = engine.dead_letter(
            P, "orders", held=[(m.id, claim.id)], description="rejected by the consumer",
            error=KINDS[kind].format(n=1000 + 37 * i),
        )  # fmt: skip
        ids.append(dead.id)
    return ids


def options(url: str, **more: str) -> dict[str, str]:
    return {"url": url, "queue": "dlq", "project": P, **more}


def poster(url: str) -> Any:
    return lambda patterns: put_patterns(url, "dlq", patterns, project=P)


def stored(engine: Engine) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in engine.get_patterns(P, "dlq")}


def test_the_follow_and_the_batch_analysis_agree_on_the_same_dead_letters(
    served: tuple[Engine, str], tmp_path: Path
) -> None:
    engine, url = served
    # Given a follow that takes the DLQ two dead letters a batch while they arrive
    reader = DeadLetterStreamReader(options(url, max_per_batch="2"))
    follower = Follower(tmp_path / "live", post=poster(url))
    offset = reader.initialOffset()
    ids_seen: dict[str, set[str]] = {}
    for kind, count in (("timeout", 3), ("key", 2), ("timeout", 2), ("refused", 3)):
        kill(engine, kind, count)
        while True:
            taken, offset = reader.read(offset)
            rows = list(taken)
            if not rows:
                break
            follower.absorb((row_dict(r) for r in rows), marker=offset["marker"])
            for pid, p in stored(engine).items():
                ids_seen.setdefault(pid, set()).update(p["message_ids"])
    live = stored(engine)
    # When the batch analysis reads the same DLQ
    export_dlq(options(url), tmp_path / "dlq.jsonl")
    batch = analyze_local(tmp_path / "dlq.jsonl", tmp_path / "batch", keep_assignments=True)
    members: dict[str, list[str]] = {}
    for mid, pid in sorted(batch.assignments.items()):
        members.setdefault(pid, []).append(mid)
    # Then both find the same patterns, with the same members, times and ids
    assert len(batch.patterns) == 3
    expected = {p["id"]: {**p, "message_ids": members[p["id"]]} for p in batch.patterns}
    assert {pid: {k: p[k] for k in COMPARED} for pid, p in live.items()} == {
        pid: {k: p[k] for k in COMPARED} for pid, p in expected.items()
    }
    # and a pattern kept its id while members arrived: every member ever stored is in the
    # pattern of that id now
    assert all(seen <= set(live[pid]["message_ids"]) for pid, seen in ids_seen.items())
    assert all(isinstance(p["rate_per_minute"], float) for p in live.values())


def test_a_restart_from_the_checkpoint_takes_each_dead_letter_once(
    served: tuple[Engine, str], tmp_path: Path
) -> None:
    engine, url = served
    checkpoint = tmp_path / "state"
    kill(engine, "timeout", 3)
    reader = DeadLetterStreamReader(options(url))
    first = Follower(tmp_path / "out", checkpoint=checkpoint)
    taken, offset = reader.read(reader.initialOffset())
    first.absorb((row_dict(r) for r in taken), marker=offset["marker"])
    # Given more dead letters while the follow is stopped
    kill(engine, "key", 2)
    # When a follow starts from the checkpoint
    again = Follower(tmp_path / "out", checkpoint=checkpoint)
    assert again.marker == offset["marker"]
    taken, end = reader.read({"marker": again.marker})
    rows = list(taken)
    result = again.absorb((row_dict(r) for r in rows), marker=end["marker"])
    # Then it read only the new ones, and counts every dead letter once
    assert len(rows) == 2
    assert result is not None and result.total == 5
    assert sorted(r["message_id"] for r in again.rows) == sorted(
        m.id for m in engine.list_dead_letters(P, "dlq", limit=100)
    )
    # and a batch taken again (a stop before its offset was saved) counts nothing twice
    assert again.absorb(again.rows[:2], marker=again.marker) is None


def test_a_follow_past_its_bound_stops_with_a_reason(tmp_path: Path) -> None:
    follower = Follower(tmp_path, max_rows=1)
    row = {"message_id": "a", "dead_lettered_at": None}
    with pytest.raises(TooLarge):
        follower.absorb([row, {**row, "message_id": "b"}])


def test_the_trend_counts_each_minute_the_newest_kept() -> None:
    at = datetime(2026, 1, 1, 12, 0, 30)
    times = [at, at + timedelta(seconds=20), at - timedelta(minutes=2), None]
    assert minute_counts(times) == [
        ["2026-01-01T11:58:00.000Z", 1],
        ["2026-01-01T12:00:00.000Z", 2],
    ]
    many = [at - timedelta(minutes=m) for m in range(100)]
    assert len(minute_counts(many)) == 60
    assert minute_counts(many)[-1] == ["2026-01-01T12:00:00.000Z", 1]


def test_the_rate_counts_the_last_five_minutes_per_minute() -> None:
    now = datetime(2026, 1, 1, 12, 0)
    times = [now - timedelta(minutes=m) for m in (0, 1, 4.9, 5, 6)] + [None]
    assert rate_per_minute(times, now) == 3 / 5


@pytest.mark.filterwarnings(PANDAS_WARNING)
def test_a_fourth_kind_of_failure_appears_as_a_pattern_and_its_alert_is_delivered(
    served: tuple[Engine, str], tmp_path: Path
) -> None:
    engine, url = served
    with receiving() as hook:
        # Given a webhook subscribed to the DLQ and a follow running
        engine.subscriptions.create(P, "dlq", subscriber=hook.url, ttl=600, options={})
        follower = Follower(tmp_path / "out", post=poster(url))
        stop = threading.Event()
        loop = threading.Thread(
            target=follow_local, args=(options(url), follower, stop, 0.05), daemon=True
        )
        loop.start()
        try:
            # When dead letters of three kinds arrive, each kind its alert
            for kind in ("timeout", "key", "refused"):
                kill(engine, kind, 3)
            assert hook.wait_for(3)
            assert {b["body"]["kind"] for b in hook.bodies} == {"new"}
            three = set(stored(engine))
            # and then a fourth kind
            (fourth, *_) = kill(engine, "currency", 2)
            assert hook.wait_for(4)
        finally:
            stop.set()
            loop.join(WAIT)
    # Then the fourth pattern is stored, and its alert names it with its examples
    patterns = stored(engine)
    (new,) = set(patterns) - three
    assert len(patterns) == 4 and patterns[new]["alert"]["kind"] == "new"
    alert = hook.bodies[-1]["body"]
    assert (alert["kind"], alert["pattern"]["id"], alert["pattern"]["count"]) == ("new", new, 2)
    assert "currency" in alert["pattern"]["template"]
    assert fourth in alert["pattern"]["example_message_ids"]
    assert len(hook.bodies) == 4  # the three known patterns alerted once, when they were new


def test_the_follow_command_stops_cleanly_on_sigterm_and_leaves_its_checkpoint(
    served: tuple[Engine, str], tmp_path: Path
) -> None:
    engine, url = served
    kill(engine, "timeout", 2)
    checkpoint = tmp_path / "state"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}  # no config file of the user
    command = [sys.executable, "-m", "deadletter", "analyze", "--queue", "dlq", "--url", url,
               "--project", P, "--follow", "--checkpoint", str(checkpoint), "--interval", "0.1",
               "--out", str(tmp_path / "out"), "--engine", "local"]  # fmt: skip
    with subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None
        # The command says each batch on stderr: wait for the first, then stop it
        said = []
        for line in proc.stderr:
            said.append(line)
            if "new dead letters" in line:
                break
        proc.send_signal(signal.SIGTERM)
        said.append(proc.stderr.read())
        assert proc.wait(WAIT) == 0, "".join(said)
    assert "stopped" in said[-1]
    assert (checkpoint / "follow.json").exists()
    assert [p["count"] for p in engine.get_patterns(P, "dlq")] == [2]


@pytest.mark.spark
@pytest.mark.filterwarnings(PANDAS_WARNING)
@pytest.mark.timeout(600)  # a streaming query of several micro-batches, each a Spark job
def test_through_a_spark_streaming_query_a_fourth_kind_is_alerted(
    spark: Any, served: tuple[Engine, str], tmp_path: Path
) -> None:
    engine, url = served
    with receiving() as hook:
        # Given a webhook on the DLQ, three kinds of dead letters, and the streaming query
        engine.subscriptions.create(P, "dlq", subscriber=hook.url, ttl=600, options={})
        for kind in ("timeout", "key", "refused"):
            kill(engine, kind, 2)
        follower = Follower(tmp_path / "out", post=poster(url), checkpoint=tmp_path / "state")
        stop = threading.Event()
        kwargs = {
            "options": options(url),
            "follower": follower,
            "stop": stop,
            "interval": 0.5,
            "checkpoint": tmp_path / "state",
        }
        loop = threading.Thread(target=follow_spark, args=(spark,), kwargs=kwargs, daemon=True)
        loop.start()
        try:
            assert hook.wait_for(3, timeout=300)
            # When a fourth kind arrives while it runs
            kill(engine, "currency", 2)
            assert hook.wait_for(4, timeout=300)
        finally:
            stop.set()
            loop.join(300)
    # Then its pattern was alerted, and every dead letter counted once
    alert = hook.bodies[-1]["body"]
    assert alert["kind"] == "new" and "currency" in alert["pattern"]["template"]
    assert sum(p["count"] for p in engine.get_patterns(P, "dlq")) == 8
    assert follower.batch is not None
