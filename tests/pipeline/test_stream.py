"""The streaming source: `spark.readStream.format("deadletter")` over a real server, with the
DLQ's numbering as the offset Spark checkpoints."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from deadletter.api.app import build_app
from deadletter.engine.engine import Engine
from deadletter.pipeline.datasource import DeadLetterStreamReader
from deadletter.storage import open_store
from tests.engine.helpers import P, fail, send, with_dlq
from tests.pipeline.conftest import PANDAS_WARNING
from tests.support.servers import serving


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Engine, str]]:
    """A server whose "orders" dead-letters into "dlq" at its first redelivery."""
    engine = Engine(open_store(f"sqlite:///{tmp_path / 'deadletter.db'}"))
    with_dlq(engine, "orders", "dlq", max_claims=1)
    with serving(build_app(engine)) as url:
        yield engine, url
    engine.store.close()


def _kill(engine: Engine, *bodies: str) -> None:
    send(engine, "orders", *bodies)
    fail(engine, "orders", 1)
    engine.claim(P, "orders", limit=1000)  # delivered once already: they move to the DLQ


def _dead_ids(engine: Engine) -> list[str]:
    return sorted(m.id for m in engine.list_dead_letters(P, "dlq", limit=1000))


def test_batches_follow_the_numbering_and_replay_exactly(served: tuple[Engine, str]) -> None:
    engine, url = served
    _kill(engine, "a", "b", "c")
    reader = DeadLetterStreamReader(
        {"url": url, "queue": "dlq", "project": P, "max_per_batch": "2", "page_size": "1"}
    )
    start = reader.initialOffset()
    rows, first = reader.read(start)
    first_ids = [r[0] for r in rows]
    assert len(first_ids) == 2
    # A batch read again between its offsets (a restart before its commit) is the same batch.
    assert [r[0] for r in reader.readBetweenOffsets(start, first)] == first_ids
    # A dead letter that arrives later comes after the offset, with the one left over.
    _kill(engine, "d")
    rows, second = reader.read(first)
    assert sorted(first_ids + [r[0] for r in rows]) == _dead_ids(engine)
    rows, third = reader.read(second)
    assert (list(rows), third) == ([], second)


def test_a_queue_streams_its_messages_as_they_are_sent(served: tuple[Engine, str]) -> None:
    engine, url = served
    reader = DeadLetterStreamReader({"url": url, "queue": "orders", "project": P})
    sent = [m.id for m in send(engine, "orders", "x", "y")]
    rows, offset = reader.read(reader.initialOffset())
    assert [r[0] for r in rows] == sent
    (later,) = [m.id for m in send(engine, "orders", "z")]
    rows, _ = reader.read(offset)
    assert [r[0] for r in rows] == [later]


def test_the_filter_option_streams_what_it_selects_only(served: tuple[Engine, str]) -> None:
    engine, url = served
    _kill(engine, "a", "b", "c")
    # Given a stream reader with the option filter (the filter language as a query string)
    where = urlencode({"body": "@ == 'b' || @ == 'd'", "reason": "max_claims"})
    reader = DeadLetterStreamReader({"url": url, "queue": "dlq", "project": P, "filter": where})
    # it reads what the filter selects, and so does each later batch
    rows, offset = reader.read(reader.initialOffset())
    _kill(engine, "d", "e")
    later, _ = reader.read(offset)
    wanted = {m.id for m in engine.list_dead_letters(P, "dlq", limit=10) if m.body in (b"b", b"d")}
    assert {r[0] for r in [*rows, *later]} == wanted and len(wanted) == 2


@pytest.mark.spark
@pytest.mark.filterwarnings(PANDAS_WARNING)
@pytest.mark.timeout(600)  # two queries of several micro-batches, each a Spark job
def test_a_restarted_streaming_query_takes_every_dead_letter_once(
    spark: Any, served: tuple[Engine, str], tmp_path: Path
) -> None:
    engine, url = served
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def start() -> Any:
        stream = (
            spark.readStream.format("deadletter")
            .option("url", url)
            .option("queue", "dlq")
            .option("project", P)
            .load()
        )
        writer = stream.writeStream.format("parquet").option("checkpointLocation", checkpoint)
        return writer.start(out)

    # Given dead letters before the query starts, and more while it runs
    _kill(engine, "a", "b", "c", "d")
    query = start()
    query.processAllAvailable()
    _kill(engine, "e", "f")
    query.processAllAvailable()
    query.stop()
    # and more while it is stopped
    _kill(engine, "g")
    # When it restarts from its checkpoint
    query = start()
    query.processAllAvailable()
    query.stop()
    # Then each dead letter was written once
    taken = sorted(r.message_id for r in spark.read.parquet(out).collect())
    assert taken == _dead_ids(engine)
    assert len(taken) == 7
