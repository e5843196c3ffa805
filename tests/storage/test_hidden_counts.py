"""Stats count claimed and delayed messages from counts the store keeps (`queue_hidden`,
migration 0013), corrected by what time changed since the sweep last passed, so that they
never count a queue. Those counts must stay exact through every way a message is hidden or
shown again: claims, releases, renewals, deletes, lapses, delays ending, dead-letter moves,
expiry, redrive, purge and queue deletion, with or without a sweep in between."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.errors import DeadletterError
from deadletter.domain.model import DeadLetterFilter, NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.transaction import SQLTransaction
from tests.engine.helpers import P, send, with_dlq

SRC, DLQ = "orders", "orders-dlq"


def counted(store: Store, queue: str, now: float) -> tuple[int, int, int]:
    """(free, claimed, delayed) of `queue` counted over its messages, the slow way."""
    with store.read() as tx:
        assert isinstance(tx, SQLTransaction)
        row = tx.one(
            "SELECT COUNT(*) AS total,"
            " COUNT(*) FILTER (WHERE claim_id IS NOT NULL AND claim_expires_at > :now) AS claimed,"
            " COUNT(*) FILTER (WHERE claim_id IS NULL AND visible_at > :now) AS delayed"
            " FROM messages WHERE project = :project AND queue = :queue AND expires_at > :now",
            {"project": P, "queue": queue, "now": now},
        )
    claimed, delayed = int(row["claimed"]), int(row["delayed"])
    return int(row["total"]) - claimed - delayed, claimed, delayed


def kept_and_classes(store: Store) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
    """(queue, class) -> n as queue_hidden keeps it, and as the messages' classes count it."""
    with store.read() as tx:
        assert isinstance(tx, SQLTransaction)
        kept = tx.all(
            "SELECT queue, hidden, SUM(n) AS n FROM queue_hidden GROUP BY queue, hidden", {}
        )
        classes = tx.all(
            "SELECT queue, hidden, COUNT(*) AS n FROM messages WHERE hidden > 0"
            " GROUP BY queue, hidden",
            {},
        )
    keep = {(r["queue"], int(r["hidden"])): int(r["n"]) for r in kept if int(r["n"])}
    return keep, {(r["queue"], int(r["hidden"])): int(r["n"]) for r in classes}


def unsettled(store: Store, queue: str, now: float) -> int:
    """How many hidden messages of `queue` stats must look at: those visible but not settled."""
    with store.read() as tx:
        assert isinstance(tx, SQLTransaction)
        rows = tx.all(q.SHOWN_SINCE_SETTLED, {"project": P, "queue": queue, "now": now})
    return sum(int(r["n"]) for r in rows)


def check(engine: Engine, store: Store, clock: ManualClock) -> None:
    now = clock.now()
    for queue in (SRC, DLQ):
        stats = engine.stats(P, queue)
        assert (stats.free, stats.claimed, stats.delayed) == counted(store, queue, now), queue
    kept, classes = kept_and_classes(store)
    assert kept == classes


@pytest.fixture
def swept(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.mark.parametrize("swept", [False, True], ids=["between sweeps", "swept"], indirect=True)
def test_claimed_and_delayed_stay_exact_through_a_message_life(
    engine: Engine, store: Store, clock: ManualClock, swept: bool
) -> None:
    def step() -> None:
        if swept:
            engine.sweep_expired()
        check(engine, store, clock)

    # Given a queue with a DLQ after two deliveries, ten ready messages and three delayed
    with_dlq(engine, SRC, DLQ, max_claims=2)
    send(engine, SRC, *[f"m{i}" for i in range(10)])
    engine.send(P, SRC, messages=[NewMessage(body=b"later", delay=30)] * 3)
    short = engine.send(P, SRC, messages=[NewMessage(body=b"short", ttl=40)])
    step()
    # When consumers claim, give back with a delay, acknowledge and renew
    claim = engine.claim(P, SRC, limit=4, ttl=60)
    step()
    first, second = claim.messages[0], claim.messages[1]
    engine.release_message(P, SRC, message_id=first.id, claim_id=claim.id, delay=20)
    engine.delete_held(P, SRC, held=[(second.id, claim.id)])
    engine.renew_claim(P, SRC, claim_id=claim.id, ttl=70)
    step()
    # Then delays end and claims lapse while time passes
    clock.advance(25)
    step()
    clock.advance(50)  # the short message expired unclaimed, the claim lapsed
    step()
    # A consumer that gives back at once, twice, sends everything visible to the DLQ
    for _ in range(2):
        again = engine.claim(P, SRC, limit=100, ttl=10)
        engine.change_visibility(
            P, SRC, message_id=again.messages[0].id, claim_id=again.id, timeout=0
        )
        engine.release_claim(P, SRC, claim_id=again.id)
        step()
    held = engine.claim(P, SRC, limit=100, ttl=10)  # all of them past the limit: moved
    assert held.messages == ()
    step()
    # Dead letters are claimed in the DLQ, lapse there, and are redriven
    engine.claim(P, DLQ, limit=3, ttl=5)
    clock.advance(6)
    step()
    task = engine.start_redrive(P, DLQ, destination=None, where=DeadLetterFilter(), rate=None)
    while engine.redrive_step(task.id, 4).status.value == "RUNNING":
        pass
    step()
    assert engine.stats(P, SRC).free == 12  # all but the one acknowledged and the one expired
    assert short[0].id not in {m.id for m in engine.claim(P, SRC, limit=100, ttl=600).messages}
    step()
    # Purge and deletion take the counts with them
    engine.purge(P, SRC)
    step()
    engine.delete_queue(P, SRC)
    engine.delete_queue(P, DLQ)
    assert kept_and_classes(store) == ({}, {})


def test_the_sweep_settles_what_became_visible_and_nothing_a_reader_sees_changes(
    engine: Engine, store: Store, clock: ManualClock
) -> None:
    engine.create_queue(P, SRC)
    engine.create_queue(P, DLQ)
    send(engine, SRC, *[f"m{i}" for i in range(50)])
    engine.send(P, SRC, messages=[NewMessage(body=b"d", delay=5)] * 20)
    claim = engine.claim(P, SRC, limit=30, ttl=10)
    clock.advance(20)
    # Lapsed claims and ended delays are still counted hidden until the sweep passes
    assert unsettled(store, SRC, clock.now()) == 50
    before = engine.stats(P, SRC)
    engine.sweep_expired()
    # After it, stats look at none of them, and count the same
    assert unsettled(store, SRC, clock.now()) == 0
    after = engine.stats(P, SRC)
    assert (after.free, after.claimed, after.delayed) == (before.free, 0, 0) == (70, 0, 0)
    # A lapsed receipt still names its message: SQS lets its consumer delete it until another
    # receive takes it, sweep or not
    assert engine.delete_message(
        P, SRC, message_id=claim.messages[0].id, claim_id=claim.id, strict=False
    )
    # Claims take the settled messages in queue order
    taken = engine.claim(P, SRC, limit=100, ttl=60).messages
    assert [m.seq for m in taken] == sorted(m.seq for m in taken)
    assert len(taken) == 69
    check(engine, store, clock)


@pytest.fixture
def second_engine(store_url: str, clock: ManualClock) -> Iterator[Engine]:
    other = open_store(store_url)
    yield Engine(other, clock)
    other.close()


def test_two_servers_claiming_and_sweeping_one_queue_keep_the_counts(
    engine: Engine, store: Store, clock: ManualClock, second_engine: Engine
) -> None:
    engine.create_queue(P, SRC)
    engine.create_queue(P, DLQ)
    send(engine, SRC, *[f"m{i}" for i in range(40)])
    for i in range(6):
        (engine if i % 2 else second_engine).claim(P, SRC, limit=5, ttl=5 + i)
        clock.advance(3)
        (second_engine if i % 2 else engine).sweep_expired()
        check(engine, store, clock)


def test_consumers_racing_on_one_queue_and_one_claim_keep_the_counts(
    engine: Engine, store: Store, clock: ManualClock
) -> None:
    """Consumers claim, give back, acknowledge and renew at once, two of them on the very
    same claim, while the sweep settles: what each write changes is the class the row has
    when it writes, not the one it had when it was first read."""
    engine.create_queue(P, SRC)
    engine.create_queue(P, DLQ)
    send(engine, SRC, *[f"m{i}" for i in range(300)])
    errors: list[BaseException] = []

    def refused_or_done(work: Callable[..., object], *args: object, **kwargs: object) -> None:
        """Run `work`; a claim that lapsed or was given back meanwhile is refused, as it may."""
        try:
            work(*args, **kwargs)
        except DeadletterError:
            pass
        except BaseException as exc:  # reported below, in the test's own thread
            errors.append(exc)

    def consumer(k: int) -> None:
        for j in range(8):
            claim = engine.claim(P, SRC, limit=6, ttl=20 + k)
            for n, m in enumerate(claim.messages):
                if n % 3 == 0:
                    refused_or_done(
                        engine.release_message,
                        P,
                        SRC,
                        message_id=m.id,
                        claim_id=claim.id,
                        delay=10 * (j % 2),
                    )
                elif n % 3 == 1:
                    refused_or_done(
                        engine.delete_message,
                        P,
                        SRC,
                        message_id=m.id,
                        claim_id=claim.id,
                        strict=False,
                    )
            # The claim's holder renews it while another gives it back
            racers = [
                threading.Thread(
                    target=refused_or_done,
                    args=(engine.renew_claim, P, SRC),
                    kwargs={"claim_id": claim.id, "ttl": 40},
                ),
                threading.Thread(
                    target=refused_or_done,
                    args=(engine.release_claim, P, SRC),
                    kwargs={"claim_id": claim.id},
                ),
            ]
            for t in racers:
                t.start()
            for t in racers:
                t.join()
            refused_or_done(engine.sweep_expired)

    threads = [threading.Thread(target=consumer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for _ in range(4):
        clock.advance(15)
        time.sleep(0.05)
    for t in threads:
        t.join()
    assert not errors, errors
    check(engine, store, clock)
    clock.advance(60)
    engine.sweep_expired()
    check(engine, store, clock)


# The schema as it was before migration 0013, for a store that holds messages already (the
# migrations after it undone first, so that the store runs them all again).
BEFORE_0013 = (
    "DROP TABLE auto_redrives",
    "DELETE FROM schema_version WHERE version = 21",
    "DROP TABLE dead_letter_discards",
    "DROP TABLE archived_dead_letters",
    "DROP TABLE saved_filters",
    "DELETE FROM schema_version WHERE version = 20",
    "ALTER TABLE tasks DROP COLUMN transform",
    "DELETE FROM schema_version WHERE version = 19",
    "CREATE TABLE counters_before (project TEXT NOT NULL, queue TEXT NOT NULL,"
    " name TEXT NOT NULL, value BIGINT NOT NULL, PRIMARY KEY (project, queue, name))",
    "INSERT INTO counters_before SELECT project, queue, name, SUM(value) FROM counters"
    " GROUP BY project, queue, name",
    "DROP TABLE counters",
    "ALTER TABLE counters_before RENAME TO counters",
    "DELETE FROM schema_version WHERE version = 18",
    "ALTER TABLE patterns DROP COLUMN batches",
    "DELETE FROM schema_version WHERE version = 17",
    "DROP INDEX messages_dl_source",
    "DELETE FROM schema_version WHERE version = 16",
    "DROP INDEX tag_states_dl_due",
    "ALTER TABLE tag_states DROP COLUMN dl_due_at",
    "DELETE FROM schema_version WHERE version = 15",
    "ALTER TABLE tasks DROP COLUMN canary",
    "DELETE FROM schema_version WHERE version = 14",
    "DROP INDEX messages_ready",
    "DROP INDEX messages_hidden",
    "DROP TABLE queue_hidden",
    "ALTER TABLE messages DROP COLUMN hidden",
    "CREATE INDEX messages_ready ON messages (project, queue, seq)"
    " WHERE claim_id IS NULL AND visible_at <= COALESCE(dl_at, enqueued_at)",
    "CREATE INDEX messages_hidden ON messages (project, queue, visible_at)"
    " WHERE claim_id IS NOT NULL OR visible_at > COALESCE(dl_at, enqueued_at)",
    "DELETE FROM schema_version WHERE version = 13",
)


def test_migration_0013_classes_and_counts_the_messages_a_store_holds(
    store_url: str, clock: ManualClock
) -> None:
    # Given a store of the schema before 0013 with claimed, delayed, lapsed, ready and
    # dead-lettered messages
    store = open_store(store_url)
    engine = Engine(store, clock)
    with_dlq(engine, SRC, DLQ, max_claims=1)
    send(engine, SRC, *[f"m{i}" for i in range(12)])
    engine.send(P, SRC, messages=[NewMessage(body=b"later", delay=30)] * 2)
    first = engine.claim(P, SRC, limit=3, ttl=60)
    engine.release_message(
        P, SRC, message_id=first.messages[0].id, claim_id=first.id, delay=100
    )  # to the DLQ
    engine.claim(P, SRC, limit=2, ttl=5)
    clock.advance(10)  # that claim lapsed: its messages are visible, and due for the DLQ
    engine.claim(P, SRC, limit=2, ttl=60)  # which this claim moves before taking two more
    expected = {queue: counted(store, queue, clock.now()) for queue in (SRC, DLQ)}
    with store.transaction() as tx:
        assert isinstance(tx, SQLTransaction)
        for statement in BEFORE_0013:
            tx.run(statement)
    store.close()
    # When it opens, migrated
    store = open_store(store_url)
    try:
        engine = Engine(store, clock)
        # Then every message has its class, the counts are kept, and stats are unchanged
        assert {queue: counted(store, queue, clock.now()) for queue in (SRC, DLQ)} == expected
        check(engine, store, clock)
        assert kept_and_classes(store)[0] == {(SRC, 1): 2, (SRC, 2): 4}
    finally:
        store.close()
