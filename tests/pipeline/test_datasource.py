"""The `deadletter` Spark data source: parallel reads with pushdown, the sink, patterns back."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from deadletter.pipeline.corpus import generate
from tests.pipeline.conftest import PANDAS_WARNING
from tests.pipeline.stub import ContractStub, as_api_message
from tests.support.servers import serving

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings(PANDAS_WARNING)]

RECORDS = list(generate(240, seed=3))


@pytest.fixture(scope="module")
def stub() -> Iterator[tuple[ContractStub, str]]:
    server = ContractStub([as_api_message(r) for r in RECORDS])
    with serving(server.app) as url:
        yield server, url


def _reader(spark: Any, url: str, **options: str) -> Any:
    reader = spark.read.format("deadletter").option("url", url).option("queue", "dlq")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_reading_a_dlq_in_partitions_returns_every_dead_letter_once(
    spark: Any, stub: tuple[ContractStub, str]
) -> None:
    server, url = stub
    df = _reader(spark, url, partitions="3", page_size="25")
    assert df.rdd.getNumPartitions() == 3
    rows = df.collect()
    assert sorted(r.message_id for r in rows) == sorted(r["message_id"] for r in RECORDS)
    first = next(r for r in rows if r.message_id == RECORDS[0]["message_id"])
    assert first.source_queue == RECORDS[0]["source_queue"]
    assert first.error == RECORDS[0]["error"]
    assert first.attributes["tenant"] == RECORDS[0]["attributes"]["tenant"]["value"]
    assert json.loads(first.body) == RECORDS[0]["body"]
    assert (
        first.dead_lettered_at.replace(tzinfo=UTC).isoformat()[:23]
        == (RECORDS[0]["dead_lettered_at"][:23])
    )
    # The partitions paged through their own time slices.
    assert any("since" in b and "until" in b for b in server.browses)
    assert any("marker" in b for b in server.browses)


def test_filters_on_source_queue_and_time_are_pushed_to_the_server(
    spark: Any, stub: tuple[ContractStub, str]
) -> None:
    from pyspark.sql import functions as F

    server, url = stub
    since = datetime(2026, 11, 21, tzinfo=UTC)
    server.browses.clear()
    df = _reader(spark, url, partitions="2").where(
        (F.col("source_queue") == "payments") & (F.col("dead_lettered_at") >= F.lit(since))
    )
    got = sorted(r.message_id for r in df.collect())
    want = sorted(
        r["message_id"]
        for r in RECORDS
        if r["source_queue"] == "payments" and r["dead_lettered_at"] >= "2026-11-21T00:00"
    )
    assert got == want and want
    # Every request the reader made carried the pushed filters.
    assert server.browses
    assert all(b.get("source_queue") == "payments" for b in server.browses)
    assert all(b.get("since", "") >= "2026-11-21T00:00:00.000Z" for b in server.browses)


def test_an_equality_on_the_empty_string_is_not_lost(
    spark: Any, stub: tuple[ContractStub, str]
) -> None:
    # Given dead letters that all have a source queue, when asked for source_queue = ''
    _, url = stub
    df = _reader(spark, url, partitions="1").where("source_queue = ''")
    # I expect none: the filter is not dropped on its way to the server
    assert df.count() == 0


def test_options_filter_when_no_predicate_is_given(
    spark: Any, stub: tuple[ContractStub, str]
) -> None:
    _, url = stub
    df = _reader(spark, url, reason="expired", partitions="1")
    got = sorted(r.message_id for r in df.collect())
    assert got == sorted(r["message_id"] for r in RECORDS if r["reason"] == "expired")


def test_the_source_tag_option_reads_one_consumer_tags_dead_letters(
    spark: Any, stub: tuple[ContractStub, str]
) -> None:
    server, url = stub
    before = len(server.browses)
    # None of the stub's dead letters came from a tag: a tag's read finds none of them,
    assert _reader(spark, url, source_tag="billing", partitions="1").count() == 0
    # because every page it asked for was of that tag.
    asked = server.browses[before:]
    assert asked and all(b.get("source_tag") == "billing" for b in asked)


def test_the_sink_posts_rows_as_messages_in_batches_of_twenty(
    spark: Any, stub: tuple[ContractStub, str]
) -> None:
    server, url = stub
    server.posts.clear()
    df = _reader(spark, url).where("source_queue = 'orders'").repartition(2)
    n = df.count()
    df.write.format("deadletter").option("url", url).option("queue", "replay").mode("append").save()
    assert {q for q, _ in server.posts} == {"replay"}
    assert all(1 <= len(batch) <= 20 for _, batch in server.posts)
    sent = [m for _, batch in server.posts for m in batch]
    assert len(sent) == n
    assert all(isinstance(m["body"], dict) and "order_id" in m["body"] for m in sent)
    assert all(m["attributes"]["tenant"]["type"] == "String" for m in sent)


def test_analysis_of_a_dlq_posts_its_patterns_back(
    spark: Any, stub: tuple[ContractStub, str], tmp_path: Path
) -> None:
    from deadletter.pipeline.analysis import analyze
    from deadletter.pipeline.remote import put_patterns

    server, url = stub
    df = _reader(spark, url, partitions="2")
    result = analyze(df, tmp_path, post=partial(put_patterns, url, "dlq"))
    stored = server.patterns["dlq"]
    assert [p["id"] for p in stored] == [p["id"] for p in result.patterns]
    assert all(len(p["message_ids"]) == p["count"] for p in stored)
    ids = [m for p in stored for m in p["message_ids"]]
    assert sorted(ids) == sorted(r["message_id"] for r in RECORDS)


def test_an_analysis_reads_the_dlq_once(
    spark: Any, stub: tuple[ContractStub, str], tmp_path: Path
) -> None:
    from deadletter.pipeline.analysis import analyze
    from deadletter.pipeline.datasource import MAX_PAGE

    def pages() -> list[str]:
        """The pages of dead letters asked for (the one-letter probe that plans the time
        slices aside)."""
        return [str(b) for b in server.browses if b.get("limit") == str(MAX_PAGE)]

    # Given the pages that one full read of the DLQ asks for
    server, url = stub
    df = _reader(spark, url, partitions="2")
    server.browses.clear()
    df.write.format("noop").mode("overwrite").save()
    one_read = len(pages())
    # When the DLQ is analysed
    server.browses.clear()
    analyze(df, tmp_path)
    # Then it asked for as many: every figure, sample and example came from that one read
    assert len(pages()) == one_read


def _dead_letter_queue(engine: Any, clock: Any) -> list[str]:
    """Given queues orders and payments whose DLQ is dlq, consumers reject six messages."""
    from deadletter.domain.model import Attribute, NewMessage, QueueSettings
    from deadletter.domain.policies import DeadLetterPolicy

    project = "123456789012"
    engine.create_queue(project, "dlq")
    policy = QueueSettings(dead_letter=DeadLetterPolicy(target="dlq", max_claims=3))
    ids = []
    for queue in ("orders", "payments"):
        engine.create_queue(project, queue, settings=policy)
        for i in range(3):
            body = {"order_id": f"ord-{i}", "queue": queue}
            attrs = {"tenant": Attribute("String", f"t{i}")}
            message = NewMessage(json.dumps(body).encode(), ttl=86400, attributes=attrs)
            engine.send(project, queue, messages=[message])
            claim = engine.claim(project, queue, limit=1)
            (msg,) = claim.messages
            engine.dead_letter(
                project,
                queue,
                held=[(msg.id, claim.id)],
                description="handler raised",
                error=f"timeout after {i}s",
            )
            ids.append(msg.id)
            clock.advance(600)  # spread the dead letters in time, within their TTL
    return ids


def test_reading_from_the_real_server_with_a_pushed_filter(spark: Any, tmp_path: Path) -> None:
    import httpx

    from deadletter.api.app import build_app
    from deadletter.clock import ManualClock
    from deadletter.engine.engine import Engine
    from deadletter.pipeline.analysis import analyze
    from deadletter.pipeline.remote import put_patterns
    from deadletter.storage import open_store

    clock = ManualClock()
    store = open_store(f"sqlite:///{tmp_path / 'dl.db'}")
    engine = Engine(store, clock)
    ids = _dead_letter_queue(engine, clock)
    requests: list[str] = []
    app = build_app(engine)

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            requests.append(f"{scope['path']}?{scope['query_string'].decode()}")
        await app(scope, receive, send)

    try:
        with serving(recording) as url:
            probe = httpx.get(
                f"{url}/v2/queues/dlq/dead_letters", headers={"Client-ID": str(uuid.uuid4())}
            )
            # A route removed or renamed fails here, never hides as a skip.
            assert probe.status_code == 200, probe.text
            requests.clear()
            df = _reader(spark, url, partitions="2", page_size="2").where(
                "source_queue = 'payments'"
            )
            assert df.rdd.getNumPartitions() == 2
            rows = df.collect()
            assert sorted(r.body for r in rows) == sorted(
                json.dumps({"order_id": f"ord-{i}", "queue": "payments"}, separators=(",", ":"))
                for i in range(3)
            )
            assert {r.reason for r in rows} == {"rejected"}
            assert {r.attributes["tenant"] for r in rows} == {"t0", "t1", "t2"}
            browses = [r for r in requests if "/dead_letters" in r]
            assert browses and all("source_queue=payments" in r for r in browses)

            # Posting the patterns back stores them, with their message ids, on the DLQ.
            post = partial(put_patterns, url, "dlq")
            result = analyze(_reader(spark, url), tmp_path / "out", post=post)
            stored = engine.get_patterns("123456789012", "dlq")
            assert [p["id"] for p in stored] == [p["id"] for p in result.patterns]
            assert sorted(m for p in stored for m in p["message_ids"]) == sorted(ids)
    finally:
        store.close()


def test_reading_and_storing_patterns_with_credentials(spark: Any, tmp_path: Path) -> None:
    """Given a server with credentials required, the data source reads the DLQ of the
    credential's project with `key_id`/`secret`, the sink stores patterns with them, and
    without them the read is refused."""
    from deadletter.api.app import build_app
    from deadletter.api.options import AppOptions
    from deadletter.auth.credentials import MasterKey
    from deadletter.clock import ManualClock
    from deadletter.engine.credentials import Authority
    from deadletter.engine.engine import Engine
    from deadletter.pipeline.remote import put_patterns
    from deadletter.storage import open_store

    clock = ManualClock()
    store = open_store(f"sqlite:///{tmp_path / 'dl.db'}")
    engine = Engine(store, clock)
    ids = _dead_letter_queue(engine, clock)
    authority = Authority(engine, MasterKey.generate())
    reader, secret = authority.create("123456789012", "reader")
    admin, admin_secret = authority.create("123456789012", "admin")
    app = build_app(engine, AppOptions(authority=authority))
    try:
        with serving(app) as url:
            rows = _reader(spark, url, key_id=reader.key_id, secret=secret).collect()
            assert sorted(r.message_id for r in rows) == sorted(ids)
            with pytest.raises(Exception, match="Unauthorized"):
                _reader(spark, url).collect()
            pattern = {"id": "p-1", "template": "timeout after <*>", "message_ids": ids[:2]}
            put_patterns(url, "dlq", [pattern], credential=(admin.key_id, admin_secret))
            stored = engine.get_patterns("123456789012", "dlq")
            assert [p["message_ids"] for p in stored if p["id"] == "p-1"] == [ids[:2]]
    finally:
        store.close()


def test_the_filter_option_is_the_filter_language_sent_with_every_read(
    spark: Any, stub: tuple[ContractStub, str]
) -> None:
    from deadletter.pipeline.datasource import Query

    server, url = stub
    server.browses.clear()
    # Given the option filter: its source queue and times join the reader's own (its times
    # narrow the slices), and every other name goes to the server as given
    text = "source_queue=payments&since=2026-11-21T00:00:00Z&error_class=KeyError&attribute=a"
    query = Query.of_options({"filter": text, "reason": "expired"})
    assert (query.source_queue, query.reason) == ("payments", "expired")
    assert query.since == datetime(2026, 11, 21, tzinfo=UTC)
    assert query.where == {"error_class": ["KeyError"], "attribute": ["a"]}
    _reader(spark, url, partitions="2", filter=text).count()
    assert server.browses
    assert all(b.get("error_class") == "KeyError" and b.get("source_queue") == "payments"
               for b in server.browses)  # fmt: skip
    # A name given both ways must agree; a blank filter is refused, not read as no filter
    with pytest.raises(ValueError, match="source_queue is given twice"):
        Query.of_options({"filter": "source_queue=a", "source_queue": "b"})
    for blank in ("", " ", "\u3000"):
        with pytest.raises(ValueError, match="filter is empty"):
            Query.of_options({"filter": blank})
        for name in ("source_queue", "reason", "source_tag", "since", "until"):
            with pytest.raises(ValueError, match=f"option {name} is empty"):
                Query.of_options({name: blank})
