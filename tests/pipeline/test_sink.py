"""The streaming sink: `df.writeStream.format("deadletter")` writes pattern assignments back
to the DLQ's stored patterns, each micro-batch once, across a restart from its checkpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deadletter.api.app import build_app
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from deadletter.pipeline.assignments import check_columns, writer_id
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


def test_the_writer_id_is_the_query_id_its_checkpoint_keeps(tmp_path: Path) -> None:
    # Given a checkpoint whose metadata holds the query's id (Spark writes it at the start)
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "metadata").write_text('{"id":"8d1e"}\n')
    # Then that is the writer id, under any sink name, as a path or a file URI
    named = {"checkpointLocation": str(checkpoint), "sink_name": "old"}
    assert writer_id(named) == "query:8d1e"
    assert writer_id({"checkpointlocation": checkpoint.as_uri()}) == "query:8d1e"
    # and a fresh checkpoint in another folder has another id
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "metadata").write_text('{"id":"77aa"}\n')
    assert writer_id({"checkpointLocation": str(fresh)}) == "query:77aa"


def test_a_checkpoint_that_cannot_be_read_falls_back_to_a_name_or_its_path() -> None:
    remote = {"checkpointLocation": "s3a://bucket/checkpoints/q1"}
    assert writer_id({**remote, "sink_name": "nightly"}) == "nightly"
    by_path = writer_id(remote)
    assert by_path.startswith("checkpoint:") and by_path != writer_id(
        {"checkpointLocation": "s3a://bucket/checkpoints/q2"}
    )
    assert writer_id({}) == "deadletter"


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
    engine.claim(P, "orders", limit=1000)  # delivered once already: they move to the DLQ


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
    # under the id of the query, which its checkpoint keeps across the restart
    query = json.loads((checkpoint / "metadata").read_text().splitlines()[0])["id"]
    with engine.store.read() as tx:
        assert list(tx.get_pattern_batches(P, "dlq")) == [f"query:{query}"]
