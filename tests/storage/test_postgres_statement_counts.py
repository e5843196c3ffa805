"""The statements PostgreSQL receives for each hot request, counted from libpq's own trace of
the wire: what each request costs the server in round trips through psycopg, pinned so that
the figure cannot drift back (docs/benchmarks.md, "Statements per request").

Counted on a plain queue (no consumer tags, FIFO order, bound or subscription) with a batch of
ten messages, as the benchmarks send, claim and acknowledge them. A statement is one Execute
(extended protocol) or one Query (simple protocol) message; BEGIN and COMMIT are counted
apart, as the frame every write transaction has (each a round trip of its own: in a pipeline
with the first statement and with the last writes they cost psycopg more CPU than the round
trips they saved, `ComposedStatements`). Round trips are the points where the client waits for
the server (a Sync, or a simple Query), after each statement has been run often enough for
psycopg to have prepared it. In a group (`storage/postgres/group.py`) a request sends the
same statements, and the frame is the group's: one BEGIN and one COMMIT for all of them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from psycopg import pq

from deadletter.clock import ManualClock
from deadletter.domain.model import DeadLetterPolicy, NewMessage, QueueSettings
from deadletter.engine.engine import Engine
from deadletter.storage.postgres.backend import PostgresStore

P = "p"
BATCH = 10
# psycopg prepares a statement on its fifth run; the round trips are counted after that.
WARM_UP = 6
FRAME = ("BEGIN", "COMMIT")

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.parametrize("store_url", ["postgres"], indirect=True),
]


def _sent(lines: list[str]) -> Iterator[tuple[str, list[str]]]:
    """The frontend messages of a trace: each line "F", length, type, then its fields,
    tab-separated; the fields split at their quotes."""
    for line in lines:
        if line.startswith("F\t"):
            kind, fields = (*line.split("\t")[2:], "")[:2]
            yield kind, fields.split('"')


def _parsed(lines: list[str]) -> Iterator[tuple[str, str]]:
    """(name, text) of each statement parsed."""
    for kind, quoted in _sent(lines):
        if kind == "Parse":
            yield quoted[1], quoted[3]


@dataclass(frozen=True)
class Sent:
    """What one request sent on the wire: its statements (the frame apart) and round trips."""

    statements: int
    frame: int
    round_trips: int


def _check_rows_come_in_binary(lines: list[str]) -> None:
    """Each column of each statement's rows in binary (format code 1, last of its seven fields
    in a RowDescription): in text, PostgreSQL spelled every body in hex and every float in
    digits, and psycopg parsed them back (docs/benchmarks.md, "Rows in binary")."""
    for line in lines:
        if line.startswith("B\t") and "\tRowDescription\t" in line:
            fields = line.split("\t", 3)[3].split()
            count, columns = int(fields[0]), fields[1:]
            codes = columns[6::7]
            assert len(codes) == count and set(codes) == {"1"}, line


class Wire:
    """libpq's trace of the store's one connection, read request by request."""

    def __init__(self, store: PostgresStore) -> None:
        fd, self.path = tempfile.mkstemp(prefix="deadletter-trace-")
        self.fd = fd
        conn = store._pool.getconn()
        conn.pgconn.trace(fd)
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        store._pool.putconn(conn)

    def sent(self, request: Callable[[], Any]) -> tuple[Sent, Any]:
        start = os.lseek(self.fd, 0, os.SEEK_END)
        result = request()
        with open(self.path) as trace:
            earlier = trace.read(start)  # where the statements psycopg prepared were parsed
            lines = trace.read().splitlines()
        # A statement is named by its Parse (unnamed, or prepared by psycopg under a name),
        # run by a Bind that names it and an Execute; a simple Query carries its text.
        texts = dict(_parsed(earlier.splitlines()))
        bound = ""
        run: list[str] = []
        syncs = 0
        _check_rows_come_in_binary(lines)
        for kind, quoted in _sent(lines):
            if kind == "Parse":
                texts[quoted[1]] = quoted[3]
            elif kind == "Bind":
                bound = texts.get(quoted[3], "")
            elif kind == "Execute":
                run.append(bound)
            elif kind == "Query":
                run.append(quoted[1])
                syncs += 1
            elif kind == "Sync":
                syncs += 1
        frame = sum(1 for text in run if text.startswith(FRAME))
        return Sent(len(run) - frame, frame, syncs), result

    def close(self) -> None:
        os.close(self.fd)
        os.unlink(self.path)


@pytest.fixture
def wired(store_url: str) -> Iterator[tuple[Engine, Wire]]:
    store = PostgresStore(store_url, pool_size=1)  # one connection: every request on one trace
    wire = Wire(store)
    try:
        yield Engine(store, ManualClock()), wire
    finally:
        store.close()
        wire.close()


def _batch() -> list[NewMessage]:
    return [NewMessage(body=b"x" * 100) for _ in range(BATCH)]


def _requests(engine: Engine) -> dict[str, Callable[[], Any]]:
    """Each hot request of a consumer and a producer, as the faces call the engine, made
    ready to run on a queue holding enough messages."""
    state: dict[str, Any] = {}

    def claim() -> Any:
        state["claim"] = c = engine.claim(P, "q", limit=BATCH, ttl=60)
        return c

    def delete_by_ids() -> Any:  # Zaqar's bulk delete, `?ids=...&claim_ids=...`
        c = engine.claim(P, "q", limit=BATCH, ttl=60)
        return lambda: engine.delete_messages(P, "q", ids=[m.id for m in c.messages])

    def delete_one() -> Any:  # Zaqar's DELETE of a message with its claim
        c = engine.claim(P, "q", limit=1, ttl=60)
        return lambda: engine.delete_message(P, "q", message_id=c.messages[0].id, claim_id=c.id)

    def acknowledge_and_claim() -> Any:  # Zaqar's claim that acknowledges the last batch
        c = engine.claim(P, "q", limit=BATCH, ttl=60)
        ids = [m.id for m in c.messages]
        return lambda: engine.acknowledge_and_claim(
            P, "q", done_claim=c.id, done=ids, limit=BATCH, ttl=60
        )

    def delete_batch() -> Any:  # SQS DeleteMessageBatch: receipt handles, one claim each
        c = engine.claim(P, "q", limit=BATCH, ttl=60)
        held = [(m.id, c.id, None) for m in c.messages]
        return lambda: engine.acknowledge(P, "q", held=held, strict=False)

    return {
        "send": lambda: lambda: engine.send(P, "q", messages=_batch()),
        "claim": lambda: claim,  # also SQS ReceiveMessage (`Engine.claim` with its TTL)
        "delete by ids": delete_by_ids,
        "delete one": delete_one,
        "acknowledge and claim": acknowledge_and_claim,
        "SQS DeleteMessageBatch": delete_batch,
    }


def measure(engine: Engine, wire: Wire) -> dict[str, Sent]:
    engine.create_queue(P, "q")
    for _ in range(WARM_UP * 8):
        engine.send(P, "q", messages=_batch())
    requests = _requests(engine)
    for _ in range(WARM_UP):
        for ready in requests.values():
            ready()()
    return {name: wire.sent(ready())[0] for name, ready in requests.items()}


# Statements (BEGIN and COMMIT apart), frame, then round trips, per request. Before the hot
# steps were composed (`storage/postgres/composed.py`): send 13 and 5, claim 6 and 7, each
# delete 5 and 6, acknowledge and claim 10 and 10. BEGIN goes with the first statement and
# COMMIT with the last writes in one round trip each (libpq's pipeline, `postgres/prepared.py`;
# psycopg's made the same round trips for more of the server's CPU, docs/benchmarks.md).
EXPECTED = {
    "send": Sent(2, 2, 3),  # the queue; number, insert and count; COMMIT
    "claim": Sent(2, 2, 3),  # the queue; pick, claim, count and record; COMMIT
    "delete by ids": Sent(3, 2, 3),  # the queue; delete and count; the counter with COMMIT
    "delete one": Sent(3, 2, 3),
    "acknowledge and claim": Sent(3, 2, 4),  # the counter goes with the claim
    "SQS DeleteMessageBatch": Sent(3, 2, 3),
}


def test_each_hot_request_sends_its_pinned_statements(wired: tuple[Engine, Wire]) -> None:
    # Given a plain queue with messages, and every request run until psycopg prepared it
    engine, wire = wired
    # When each hot request runs once more
    counted = measure(engine, wire)
    # I expect the statements and round trips pinned for it
    assert counted == EXPECTED


def test_a_claim_moves_the_poisoned_messages_it_took_in_one_statement(
    wired: tuple[Engine, Wire],
) -> None:
    # Given ten messages delivered once on a queue whose policy allows one delivery
    engine, wire = wired
    assert isinstance(engine.clock, ManualClock)
    engine.create_queue(P, "dlq")
    policy = DeadLetterPolicy(target="dlq", max_claims=1)
    engine.create_queue(P, "q", settings=QueueSettings(dead_letter=policy))
    engine.send(P, "q", messages=_batch())
    engine.claim(P, "q", limit=BATCH, ttl=60)
    engine.clock.advance(61)
    # When a claim takes them all again, after their claim lapsed
    sent, claim = wire.sent(lambda: engine.claim(P, "q", limit=BATCH, ttl=60))
    # I expect none delivered, all ten in the DLQ, moved by one statement: the queue, the
    # claim step, the DLQ's row, the move, the claim step again (nothing left to take) and
    # the claim's record deleted
    assert claim.messages == ()
    assert engine.stats(P, "dlq").total == BATCH
    assert sent.statements == 6


# A request in a group (`storage/postgres/group.py`): its own statements as alone, a round
# trip each, but for the queue's row, read once for the group, and the counter it would
# write behind its COMMIT: the group's BEGIN goes with its first statement, and its COMMIT
# is one round trip for the whole group, behind every counter its requests bumped, in one
# statement.
GROUP = 4
# The requests that write a counter behind their COMMIT, alone.
COUNTER_AT_COMMIT = {"delete by ids", "delete one", "SQS DeleteMessageBatch"}


def test_requests_in_a_group_share_one_frame(wired: tuple[Engine, Wire]) -> None:
    # Given every request run until psycopg prepared it, and messages enough for more
    engine, wire = wired
    measure(engine, wire)
    for _ in range(GROUP * 6):
        engine.send(P, "q", messages=_batch())
    for name, ready in _requests(engine).items():
        # When four of a kind run together
        calls = [ready() for _ in range(GROUP)]
        sent, outcomes = wire.sent(lambda calls=calls: engine.run_together(calls))
        for done in outcomes:
            assert done is not None
            done.result()
        # I expect the queue read once, each its other statements as alone, a round trip
        # each, and one frame for the four, their counters written once with its COMMIT
        counter = name in COUNTER_AT_COMMIT
        alone = EXPECTED[name]
        own_statements = alone.statements - 1 - counter
        own_round_trips = alone.round_trips - 2  # the queue's, and the COMMIT's
        expected = Sent(1 + GROUP * own_statements + counter, 2, 1 + GROUP * own_round_trips + 1)
        assert sent == expected, name
