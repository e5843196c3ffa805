"""The streaming sink: `df.writeStream.format("deadletter")` writes pattern assignments back
to the DLQ's stored patterns, each micro-batch once, across a restart from its checkpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deadletter.api.app import build_app
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from deadletter.pipeline.assignments import Assignment, check_columns, merge
from deadletter.storage import open_store
from tests.engine.helpers import P, fail, send, with_dlq
from tests.pipeline.conftest import PANDAS_WARNING
from tests.support.servers import serving

KINDS = ("timeout", "negative", "currency", "schema")


class Stores(EngineListener):
    """Counts the stores of patterns: a batch merged twice would be two."""

    def __init__(self) -> None:
        self.count = 0

    def patterns_stored(self, project: str, dlq: str, count: int) -> None:
        self.count += 1


def a(message_id: str, pattern_id: str, at: str | None = None) -> Assignment:
    return Assignment(message_id, pattern_id, f"{pattern_id} <*>", None, at)


def test_a_batch_merges_once_by_its_id_and_a_member_counts_once() -> None:
    # Given a pattern the batch analysis stored with two members
    stored = [{"id": "p-1", "template": "timeout <*>", "count": 2, "message_ids": ["m1", "m2"]}]
    # When batch 0 assigns a new member and a known one, and a new pattern
    at = "2026-11-22T15:04:05.000Z"
    first = merge(stored, [a("m3", "p-1", at), a("m1", "p-1"), a("m4", "p-2", at)], "s", 0)
    assert first is not None
    by_id = {p["id"]: p for p in first}
    # Then each pattern counts its distinct members, and knows when they died
    assert (by_id["p-1"]["count"], by_id["p-1"]["message_ids"]) == (3, ["m1", "m2", "m3"])
    assert (by_id["p-2"]["count"], by_id["p-2"]["template"]) == (1, "p-2 <*>")
    assert by_id["p-2"]["first_seen"] == by_id["p-2"]["last_seen"] == at
    assert by_id["p-2"]["minute_counts"] == [["2026-11-22T15:04:00.000Z", 1]]
    # And batch 0 again (a replay after a restart) is skipped whole, batch 1 is not
    assert merge(first, [a("m5", "p-1")], "s", 0) is None
    second = merge(first, [a("m5", "p-1")], "s", 1)
    assert second is not None and {p["id"]: p["count"] for p in second} == {"p-1": 4, "p-2": 1}
    # while another sink's stamp does not hold this one back
    assert merge(second, [a("m6", "p-1")], "other", 0) is not None


def test_a_stream_without_the_ids_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="pattern_id"):
        check_columns(["message_id", "body"])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Engine, str, Stores]]:
    stores = Stores()
    engine = Engine(open_store(f"sqlite:///{tmp_path / 'deadletter.db'}"), listeners=[stores])
    with_dlq(engine, "orders", "dlq", max_claims=1)
    with serving(build_app(engine)) as url:
        yield engine, url, stores
    engine.store.close()


def _kill(engine: Engine, *bodies: str) -> None:
    send(engine, "orders", *bodies)
    fail(engine, "orders", 1)
    engine.claim(P, "orders", 1000)  # delivered once already: they move to the DLQ


def _expected(engine: Engine) -> dict[str, list[str]]:
    """Each kind's dead letters, by the word their body starts with."""
    out: dict[str, list[str]] = {}
    for m in engine.list_dead_letters(P, "dlq", limit=1000):
        body = m.body.decode() if isinstance(m.body, bytes) else str(m.body)
        out.setdefault(f"p-{body.split()[0]}", []).append(m.id)
    return {k: sorted(v) for k, v in out.items()}


def _stored(engine: Engine) -> dict[str, list[str]]:
    return {p["id"]: sorted(p["message_ids"]) for p in engine.get_patterns(P, "dlq")}


@pytest.mark.spark
@pytest.mark.filterwarnings(PANDAS_WARNING)
@pytest.mark.timeout(600)  # two queries of several micro-batches, each a Spark job
def test_a_restarted_query_writes_every_assignment_once(
    spark: Any, served: tuple[Engine, str, Stores], tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    engine, url, stores = served
    checkpoint = tmp_path / "checkpoint"

    def start() -> Any:
        dead = (
            spark.readStream.format("deadletter")
            .option("url", url)
            .option("queue", "dlq")
            .option("project", P)
            .load()
        )
        kind = F.regexp_extract("body", r"^\"?(\w+)", 1)
        assigned = dead.select(
            "message_id",
            F.concat(F.lit("p-"), kind).alias("pattern_id"),
            F.concat(kind, F.lit(" <*>")).alias("template"),
            "dead_lettered_at",
        )
        return (
            assigned.writeStream.format("deadletter")
            .option("url", url)
            .option("queue", "dlq")
            .option("project", P)
            .option("checkpointLocation", str(checkpoint))
            .start()
        )

    # Given dead letters of three kinds, and more while the query runs
    _kill(engine, "timeout 1", "negative 2", "currency 3", "timeout 4")
    query = start()
    query.processAllAvailable()
    _kill(engine, "negative 5")
    query.processAllAvailable()
    query.stop()
    assert _stored(engine) == _expected(engine)
    assert set(_stored(engine)) == {"p-timeout", "p-negative", "p-currency"}
    writes = stores.count
    # When a fourth kind arrives while it is stopped, and its last batch's commit is lost
    # (Spark then runs that batch again, under the same id)
    _kill(engine, "schema 6", "timeout 7")
    commits = sorted((checkpoint / "commits").iterdir(), key=lambda p: p.name)
    last = [p for p in commits if p.name.isdigit()][-1]
    last.unlink()
    (checkpoint / "commits" / f".{last.name}.crc").unlink(missing_ok=True)
    query = start()
    query.processAllAvailable()
    query.stop()
    # Then every dead letter is in its pattern once, the fourth pattern included
    assert _stored(engine) == _expected(engine)
    counts = {p["id"]: p["count"] for p in engine.get_patterns(P, "dlq")}
    assert counts == {"p-timeout": 3, "p-negative": 2, "p-currency": 1, "p-schema": 1}
    # and the replayed batch wrote nothing: one store for the batch of the new dead letters
    assert stores.count == writes + 1
