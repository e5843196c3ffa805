"""The hot statements run through libpq's own prepared statements (`postgres/prepared.py`):
spelled as libpq takes them, prepared once per session, and still there after a rollback."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.adapt import PyFormat

from deadletter.domain.errors import DeadletterError
from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage.postgres.backend import PostgresStore
from deadletter.storage.postgres.composed import INSERT_SENT
from deadletter.storage.postgres.dialect import POSTGRES
from deadletter.storage.postgres.prepared import PREPARE_AFTER, PreparedCursor, positional
from tests.services import postgres_schema


def test_a_statement_is_spelled_with_numbered_parameters_one_per_name() -> None:
    # Given a statement in psycopg's spelling, one name used twice and a percent sign doubled
    spelled = positional("SELECT %(a)s, %(b)s WHERE x LIKE 'a%%' AND y = %(a)s")
    # I expect each name numbered once, in order, and the percent sign single again
    assert spelled.text == b"SELECT $1, $2 WHERE x LIKE 'a%' AND y = $1"
    assert spelled.names == ("a", "b")


def test_a_parameter_spelled_b_goes_in_binary_and_the_others_as_psycopg_chooses() -> None:
    spelled = positional("SELECT %(a)s, (%(bodies)b::bytea[])[1], %(a)s")
    assert spelled.text == b"SELECT $1, ($2::bytea[])[1], $1"
    assert spelled.formats == (PyFormat.AUTO, PyFormat.BINARY)


LOOKUP = "SELECT :v = ANY(:ids) AS hit WHERE (:v <> ALL(:ids) OR :ids IS NULL OR :v = :v)"


def test_a_list_parameter_goes_in_binary_wherever_its_name_appears() -> None:
    # Given a statement that looks up ids in a list it also tests for NULL
    spelled = positional(POSTGRES.compile(LOOKUP).text)
    # I expect the list in binary, both times, and the other parameter as psycopg chooses
    assert dict(zip(spelled.names, spelled.formats, strict=True)) == {
        "v": PyFormat.AUTO,
        "ids": PyFormat.BINARY,
    }


@pytest.mark.postgres
@pytest.mark.parametrize("ids", [["a", "é€"], [], None], ids=["ids", "empty", "null"])
def test_a_list_in_binary_is_looked_up_through_libpq_and_through_psycopgs_cursor(
    ids: list[str] | None,
) -> None:
    with postgres_schema() as url, psycopg.connect(url, autocommit=True) as conn:
        statement = POSTGRES.compile(LOOKUP)
        cursor = PreparedCursor(conn.cursor())
        cursor.run(positional(statement.text), {"v": "é€", "ids": ids}, prepare=False)
        direct = cursor.fetchall()
        through_psycopg = conn.execute(statement.text, {"v": "é€", "ids": ids}).fetchall()
    expected = None if ids is None else "é€" in ids
    assert [r["hit"] for r in direct] == [r[0] for r in through_psycopg] == [expected]


def test_a_send_carries_its_bodies_apart_in_binary_not_in_the_rows_json() -> None:
    # Given the statement a send runs, as the store spells it
    spelled = positional(POSTGRES.compile(INSERT_SENT).text)
    formats = dict(zip(spelled.names, spelled.formats, strict=True))
    # I expect the bodies in a binary array of their own, and the rows' JSON without them
    assert formats["bodies"] is PyFormat.BINARY
    assert formats["rows"] is PyFormat.AUTO
    assert b"body_hex" not in spelled.text and b"decode(" not in spelled.text


@pytest.mark.postgres
def test_every_byte_of_a_body_comes_back_as_it_was_sent_before_and_after_preparing() -> None:
    bodies = [bytes(range(256)), b"", b"\\x00\x00'\"{}", "é€😀".encode()] * 2
    with postgres_schema() as url:
        store = PostgresStore(url, pool_size=1)
        try:
            engine = Engine(store)
            engine.create_queue("p", "q")
            # Given sends of every byte value, empty bodies and escapes, planned with their
            # values at first and prepared once they have run often enough
            for _ in range(PREPARE_AFTER + 2):
                engine.send("p", "q", messages=[NewMessage(body=b) for b in bodies])
            # I expect each body back byte for byte, in order
            got = engine.claim("p", "q", limit=len(bodies) * (PREPARE_AFTER + 2), ttl=60)
        finally:
            store.close()
    assert [m.body for m in got.messages] == bodies * (PREPARE_AFTER + 2)


def _prepared(store: PostgresStore) -> list[dict[str, Any]]:
    with store.read() as tx:
        rows: list[dict[str, Any]] = tx.all(  # type: ignore[attr-defined]
            "SELECT name, statement FROM pg_prepared_statements", {}
        )
    return rows


@pytest.mark.postgres
def test_the_claims_statements_stay_prepared_after_transactions_that_roll_back() -> None:
    with postgres_schema() as url:
        store = PostgresStore(url, pool_size=1)  # one session, whose prepared statements we read
        try:
            engine = Engine(store)
            # Given a queue claimed often enough for its statements to be prepared
            engine.create_queue("p", "q")
            engine.send("p", "q", messages=[NewMessage(body=b"{}")] * 40)
            for _ in range(PREPARE_AFTER + 1):
                engine.claim("p", "q", limit=1, ttl=60)
            before = _prepared(store)
            # When transactions on the same session fail and roll back
            for _ in range(3):
                with pytest.raises(DeadletterError):
                    engine.delete_message("p", "q", message_id="nope", claim_id="nope")
                with pytest.raises(DeadletterError):
                    engine.stats("p", "missing")
            # I expect the claims to go on with the statements prepared before
            for _ in range(3):
                assert len(engine.claim("p", "q", limit=1, ttl=60).messages) == 1
            after = _prepared(store)
        finally:
            store.close()
    claims = [p for p in before if "SKIP LOCKED" in p["statement"]]
    assert claims and all(p["name"].startswith("_dl_") for p in claims)
    assert {p["name"] for p in before} <= {p["name"] for p in after}


@pytest.mark.postgres
def test_a_commit_behind_a_failing_statement_commits_nothing() -> None:
    import psycopg
    from psycopg.pq import TransactionStatus
    from psycopg.rows import dict_row

    from deadletter.storage.postgres.prepared import PreparedCursor

    with postgres_schema() as url, psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (n int PRIMARY KEY)")
        cursor = PreparedCursor(conn.cursor(row_factory=dict_row))
        insert = positional("INSERT INTO t (n) VALUES (%(n)s::int)")
        # Given a transaction whose BEGIN went ahead of its first write
        cursor.ahead = b"BEGIN"
        cursor.run(insert, {"n": 1}, prepare=True)
        # When its last write fails with the COMMIT behind it, in one round trip
        cursor.behind = b"COMMIT"
        with pytest.raises(psycopg.errors.UniqueViolation):
            cursor.run(insert, {"n": 1}, prepare=True)
        # I expect the transaction failed, not committed, and nothing of it kept once rolled back
        assert conn.info.transaction_status == TransactionStatus.INERROR
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
