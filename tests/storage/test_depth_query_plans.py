"""The claim, delete-by-id, listing and stats statements go straight to what they return:
none of them walks the claimed or delayed messages at a queue's head, nor its whole depth."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from deadletter.domain.model import ListQuery, NewMessage, Queue, QueueSettings
from deadletter.domain.provenance import Reason
from deadletter.engine import transitions
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from deadletter.storage.postgres.backend import PostgresStore, PostgresTransaction
from deadletter.storage.postgres.dialect import POSTGRES
from deadletter.storage.sql import queries as q
from deadletter.storage.sqlite.backend import SQLiteStore
from deadletter.storage.sqlite.dialect import SQLITE
from tests.services import postgres_schema

NOW = 1_000.0
PARAMS: dict[str, Any] = {
    "project": "p", "queue": "q", "now": NOW, "limit": 10, "ids": ["a", "b"],
    "after_seq": 0, "max_seq": None, "include_claimed": False, "include_delayed": False,
    "exclude_client_id": None, "dl_source": None, "dl_reason": None, "dl_since": None,
    "dl_until": None, "dl_ids": None, "claim": "c", "lapsed": False, "done": NOW + 3600,
    "backoff_end": NOW + 600,
}  # fmt: skip


def sqlite_plan(store: SQLiteStore, sql: str) -> list[str]:
    statement = SQLITE.compile(sql)
    params = SQLITE.bind(statement, PARAMS)
    return [row[3] for row in store._conn.execute(f"EXPLAIN QUERY PLAN {statement.text}", params)]


@pytest.mark.parametrize(
    ("sql", "step"),
    [
        (q.CLAIMABLE_READY, "SEARCH messages USING INDEX messages_ready (project=? AND queue=?)"),
        (
            q.CLAIMABLE_HIDDEN,
            "USING INDEX messages_hidden (project=? AND queue=? AND visible_at<?)",
        ),
        (q.LIST_READY, "SEARCH messages USING INDEX messages_ready (project=? AND queue=?"),
        (q.LIST_HIDDEN, "USING INDEX messages_hidden (project=? AND queue=? AND visible_at<?)"),
        (q.GET_MESSAGES, "USING INDEX sqlite_autoindex_messages_1 (id=?)"),
        (q.DELETE_MESSAGES, "USING INDEX sqlite_autoindex_messages_1 (id=?)"),
        (q.DELETE_HELD, "USING INDEX sqlite_autoindex_messages_1 (id=?)"),
        (
            q.SHOWN_SINCE_SETTLED,
            "USING INDEX messages_hidden (project=? AND queue=? AND visible_at<?)",
        ),
        (q.SETTLE_HIDDEN, "USING INDEX messages_hidden (project=? AND queue=? AND visible_at<?)"),
        (
            q.LAPSED_IN_BACKOFF,
            "USING INDEX messages_hidden (project=? AND queue=? AND visible_at>? AND visible_at<?)",
        ),
        (q.PLACES_OF, "USING INDEX sqlite_autoindex_messages_1 (id=?)"),
        (q.DEPTHS, "USING INDEX sqlite_autoindex_queue_depths_1 (project=? AND queue=?)"),
        (q.HIDDEN_COUNTS, "USING INDEX sqlite_autoindex_queue_hidden_1 (project=? AND queue=?)"),
        (q.EXPIRED_DEPTHS, "USING INDEX messages_expiry (expires_at<?)"),
    ],
)
def test_sqlite_statements_search_the_index_made_for_them(
    tmp_path: Path, sql: str, step: str
) -> None:
    store = SQLiteStore(tmp_path / "plans.db")
    try:
        plan = sqlite_plan(store, sql)
    finally:
        store.close()
    assert any(step in s for s in plan), plan
    assert not any("messages_queue_seq" in s or s.startswith("SCAN messages") for s in plan), plan


def test_sqlite_claims_take_ready_messages_in_index_order(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "plans.db")
    try:
        plan = sqlite_plan(store, q.CLAIMABLE_READY)
    finally:
        store.close()
    assert not any("TEMP B-TREE" in s for s in plan), plan


def fill_busy_head(store: Store, hidden: int, ready: int) -> None:
    """`hidden` messages at the head, half claimed and half delayed, then `ready` free ones."""
    messages = []
    for i in range(hidden + ready):
        m = transitions.enqueued(
            NewMessage(body=b"x"), message_id=uuid.uuid4().hex, queue="q", now=NOW - 10, ttl=3600,
            delay=600 if hidden // 2 <= i < hidden else 0, eligible=True, client_id=None,
        )  # fmt: skip
        if i < hidden // 2:
            m = transitions.claimed(
                m, claim_id=uuid.uuid4().hex, now=NOW - 5, expires=NOW + 600, grace=60
            )
        messages.append(m)
    with store.transaction() as tx:
        tx.insert_messages("p", messages)


def removed_by_filter(node: dict[str, Any]) -> int:
    own = int(node.get("Rows Removed by Filter", 0)) + int(
        node.get("Rows Removed by Index Recheck", 0)
    )
    return own + sum(removed_by_filter(child) for child in node.get("Plans", []))


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    [q.CLAIMABLE_READY, q.CLAIMABLE_HIDDEN, q.LIST_READY, q.LIST_HIDDEN, q.SHOWN_SINCE_SETTLED],
)
def test_postgres_statements_never_filter_out_the_busy_head(sql: str) -> None:
    """Whatever plan PostgreSQL picks for a queue of 400 claimed and delayed messages ahead of
    20 ready ones (sequential scans off, as on a large table), it throws no row away."""
    with postgres_schema() as url:
        store = PostgresStore(url)
        try:
            fill_busy_head(store, 400, 20)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ANALYZE messages")
                conn.execute("SET enable_seqscan = off")
                text = POSTGRES.compile(sql).text
                row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {text}", PARAMS).fetchone()
        finally:
            store.close()
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    assert removed_by_filter(plan[0]["Plan"]) == 0, json.dumps(plan, indent=1)


def test_claims_and_listings_skip_a_busy_head_on_each_store(store: Store) -> None:
    """Behind claimed and delayed messages, the ready ones are claimed and listed in order."""
    fill_busy_head(store, 40, 5)
    with store.transaction() as tx:
        claimable = tx.claimable("p", "q", NOW, 10)
        listed = tx.list_messages("p", "q", NOW, ListQuery(limit=10))
        counts = tx.counts("p", "q", NOW)
    assert [m.seq for m in claimable] == [m.seq for m in listed]
    assert len(claimable) == 5
    assert (counts.free, counts.claimed, counts.delayed) == (5, 20, 20)


@pytest.mark.postgres
@pytest.mark.parametrize("analyzed", [False, True], ids=["fresh", "analyzed"])
@pytest.mark.parametrize(
    "sql",
    [
        q.GET_MESSAGES, q.DELETE_MESSAGES, q.DELETE_HELD, q.PLACES_OF, q.CLAIMABLE_HIDDEN,
        q.LIST_HIDDEN, q.CLAIMED_BY, q.SHOWN_SINCE_SETTLED, q.SETTLE_HIDDEN, q.LAPSED_IN_BACKOFF,
    ],
)  # fmt: skip
def test_postgres_never_walks_a_deep_queue_whatever_its_statistics(
    sql: str, analyzed: bool
) -> None:
    """A queue of 2,000 ready messages, filled since the last ANALYZE (the table looks empty
    to the planner) or analyzed: reads and deletes by id, by claim, and of hidden messages
    must go to their rows, never walk the queue in seq order."""
    with postgres_schema() as url:
        store = PostgresStore(url)
        try:
            fill_busy_head(store, 0, 2_000)
            with psycopg.connect(url) as conn:
                if analyzed:
                    conn.execute("ANALYZE messages")
                ids = [r[0] for r in conn.execute("SELECT id FROM messages LIMIT 3")]
                text = POSTGRES.compile(sql).text
                params = {**PARAMS, "ids": ids, "claim_id": "c"}
                row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {text}", params).fetchone()
                conn.rollback()
        finally:
            store.close()
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    assert removed_by_filter(plan[0]["Plan"]) == 0, json.dumps(plan, indent=1)
    assert "messages_queue_seq" not in json.dumps(plan)


@pytest.mark.postgres
@pytest.mark.parametrize("analyzed", [False, True], ids=["fresh", "analyzed"])
def test_postgres_acknowledgements_never_walk_the_expiry_index(analyzed: bool) -> None:
    """1,000 messages of which 500 were claimed and acknowledged, then a claim of ten: its
    acknowledgement goes to its rows by id or by claim. `expires_at > :now` holds for every
    live message, so the expiry index (the sweeps') would give back the whole table; without
    statistics, PostgreSQL took it for a narrow range and walked it."""
    with postgres_schema() as url:
        store = PostgresStore(url)
        try:
            engine = Engine(store)
            engine.create_queue("p", "q")
            for _ in range(100):
                engine.send("p", "q", messages=[NewMessage(body=b"x" * 1000)] * 10)
            for _ in range(50):
                done = engine.claim("p", "q", limit=10, ttl=60)
                engine.acknowledge("p", "q", held=[(m.id, done.id, None) for m in done.messages])
            claim = engine.claim("p", "q", limit=10, ttl=60)
            with psycopg.connect(url) as conn:
                if analyzed:
                    conn.execute("ANALYZE messages")
                text = POSTGRES.compile(q.DELETE_HELD).text
                ids = [m.id for m in claim.messages]
                now = engine.clock.now()
                params = {**PARAMS, "ids": ids, "claim": claim.id, "now": now, "done": now + 60}
                row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {text}", params).fetchone()
                conn.rollback()
        finally:
            store.close()
    assert row is not None
    plan = json.dumps(row[0])
    assert "messages_expiry" not in plan, plan
    assert '"Actual Rows": 10' in plan  # the claim's ten, found and deleted


# A small queue costed as PostgreSQL costs a queue of a million messages, thresholds at 0:
# there it estimates the hidden messages that have become visible (none, once the sweep has
# settled them) from each column alone, 140,000 rows of 3,000,000, and the plan's cost passes
# the thresholds of JIT compilation and of parallel workers.
DEEP_QUEUE_COSTS = (
    "jit_above_cost", "parallel_setup_cost", "parallel_tuple_cost",
    "min_parallel_index_scan_size", "min_parallel_table_scan_size",
)  # fmt: skip


def plan_nodes(node: dict[str, Any]) -> list[str]:
    return [node["Node Type"], *(t for child in node.get("Plans", []) for t in plan_nodes(child))]


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    [q.CLAIMABLE_READY, q.CLAIMABLE_HIDDEN, q.LIST_READY, q.LIST_HIDDEN, q.SHOWN_SINCE_SETTLED],
)
def test_postgres_sessions_never_compile_nor_parallelise_a_statement_costed_deep(
    sql: str,
) -> None:
    """On the store's own connections, a statement that PostgreSQL costs as if it read a deep
    queue is neither compiled by JIT (5-8 ms) nor given parallel workers (5-20 ms): it reads
    a few rows through its index in 0.1 ms."""
    with postgres_schema() as url:
        store = PostgresStore(url)
        try:
            fill_busy_head(store, 400, 400)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ANALYZE messages")
            with store.transaction() as tx:
                assert isinstance(tx, PostgresTransaction)
                for setting in DEEP_QUEUE_COSTS:
                    tx.run(f"SET LOCAL {setting} = 0")
                row = tx.one(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", PARAMS)
        finally:
            store.close()
    plan = row["QUERY PLAN"]
    plan = plan if isinstance(plan, list) else json.loads(plan)
    assert "JIT" not in plan[0], json.dumps(plan, indent=1)
    assert not any("Gather" in n for n in plan_nodes(plan[0]["Plan"])), json.dumps(plan, indent=1)


# Dead letters of one source queue (migration 0016): a listing, a count or a redrive step
# filtered by source reads that source's dead letters in seq order, never the whole DLQ.
BY_SOURCE = [
    q.LIST_MESSAGES, q.LIST_READY, q.DEAD_LETTERS, q.DEAD_LETTERS_LOCKED,
    q.DEAD_LETTER_SOURCES_LOCKED, q.COUNT_DEAD_LETTERS,
]  # fmt: skip
SOURCE_PARAMS = {**PARAMS, "dl_source": "rare", "max_seq": 1 << 62}


@pytest.mark.parametrize("sql", BY_SOURCE)
@pytest.mark.parametrize("tagged", [False, True], ids=["any tag", "one tag"])
def test_sqlite_reads_one_sources_dead_letters_through_their_index(
    tmp_path: Path, sql: str, tagged: bool
) -> None:
    variant = q.by_source(sql)
    store = SQLiteStore(tmp_path / "plans.db")
    try:
        statement = SQLITE.compile(q.by_source_tag(variant) if tagged else variant)
        params = SQLITE.bind(statement, {**SOURCE_PARAMS, "dl_tag": "t"})
        plan = [r[3] for r in store._conn.execute(f"EXPLAIN QUERY PLAN {statement.text}", params)]
    finally:
        store.close()
    step = "USING INDEX messages_dl_source (project=? AND queue=? AND dl_source=?"
    assert any(step in s for s in plan), plan
    assert not any("messages_queue_seq" in s or s.startswith("SCAN messages") for s in plan), plan


DLQ_Q = Queue("p", "q", QueueSettings(), NOW, NOW)


def fill_dlq(store: Store, common: int, rare: int) -> None:
    """A DLQ `q` of `common` dead letters from queue `common`, then `rare` from queue `rare`."""
    messages = []
    for i in range(common + rare):
        m = transitions.enqueued(
            NewMessage(body=b"x"),
            message_id=uuid.uuid4().hex,
            queue="src",
            now=NOW - 10,
            ttl=3600,
            delay=0,
            eligible=True,
            client_id=None,
        )
        source = Queue("p", "common" if i < common else "rare", QueueSettings(), NOW, NOW)
        messages.append(
            transitions.dead_lettered(
                m, source=source, dlq=DLQ_Q, reason=Reason.MAX_CLAIMS, now=NOW - 5
            )
        )
    with store.transaction() as tx:
        tx.insert_messages("p", messages)


@pytest.mark.postgres
@pytest.mark.parametrize("analyzed", [False, True], ids=["fresh", "analyzed"])
@pytest.mark.parametrize("sql", BY_SOURCE)
def test_postgres_reads_a_rare_sources_dead_letters_without_walking_the_dlq(
    sql: str, analyzed: bool
) -> None:
    """Ten dead letters of one source behind 3,000 of another, filled since the last ANALYZE
    or analyzed: the statement goes to the ten through their index (it read every row of the
    table, 4.4 s at a million)."""
    with postgres_schema() as url:
        store = PostgresStore(url)
        try:
            fill_dlq(store, 3_000, 10)
            with psycopg.connect(url, autocommit=True) as conn:
                if analyzed:
                    conn.execute("ANALYZE messages")
                text = POSTGRES.compile(q.by_source(sql)).text
                conn.execute("BEGIN")
                row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {text}", SOURCE_PARAMS)
                plan = row.fetchone()
                conn.execute("ROLLBACK")
        finally:
            store.close()
    assert plan is not None
    found = plan[0] if isinstance(plan[0], list) else json.loads(plan[0])
    assert "messages_dl_source" in json.dumps(found), json.dumps(found, indent=1)
    assert removed_by_filter(found[0]["Plan"]) == 0, json.dumps(found, indent=1)
