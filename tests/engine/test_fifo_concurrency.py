"""Concurrent consumers of one FIFO queue, each thread with its own store connection: no two
hold messages of one group at once, each group is received in order, each message once."""

from __future__ import annotations

import threading
from collections import defaultdict

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.model import NewMessage, QueueSettings
from deadletter.engine import fifo
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.engine.helpers import P

GROUPS = 6
PER_GROUP = 40
CONSUMERS = 8
CLAIM_TTL = 600  # longer than the test: no claim lapses, no message comes twice


def test_concurrent_consumers_never_hold_one_group_twice(store_url: str) -> None:
    # Given a FIFO queue with several groups interleaved
    store = open_store(store_url)
    engine = Engine(store)
    engine.create_queue(P, "q.fifo", settings=QueueSettings(fifo=True))
    for i in range(PER_GROUP):
        engine.send(
            P,
            "q.fifo",
            messages=[
                NewMessage(f"{g}:{i:03}".encode(), group_id=f"g{g}", deduplication_id=f"{g}.{i}")
                for g in range(GROUPS)
            ],
        )
    holder: dict[str, int] = {}  # group -> consumer holding messages of it
    guard = threading.Lock()
    violations: list[str] = []
    received: dict[str, list[str]] = defaultdict(list)
    start = threading.Barrier(CONSUMERS)

    def consume(me: int) -> None:
        # When many consumers receive and delete at once, each with its own connection
        own = open_store(store_url)
        try:
            mine = Engine(own)
            start.wait()
            while True:
                claim = mine.claim(P, "q.fifo", limit=1 + me % 3, ttl=CLAIM_TTL)
                if not claim.messages:
                    if mine.stats(P, "q.fifo").total == 0:
                        return
                    continue
                groups = {m.group_id for m in claim.messages if m.group_id}
                with guard:
                    for g in groups:
                        if g in holder:
                            violations.append(f"{g} held by {holder[g]} and {me}")
                        holder[g] = me
                    for m in claim.messages:
                        received[m.group_id or ""].append(m.body.decode())
                # The group is let go before the delete commits: another consumer can only
                # get it once the delete has committed, after this.
                with guard:
                    for g in groups:
                        holder.pop(g, None)
                mine.delete_held(P, "q.fifo", held=[(m.id, claim.id) for m in claim.messages])
        finally:
            own.close()

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(CONSUMERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        # Then no group was held twice, and each group came in order, every message once
        assert violations == []
        for g in range(GROUPS):
            assert received[f"g{g}"] == [f"{g}:{i:03}" for i in range(PER_GROUP)]
    finally:
        store.close()


@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
def test_a_claim_skips_a_group_that_another_claim_is_taking(
    store_url: str, clock: ManualClock
) -> None:
    """PostgreSQL only: on SQLite writers are serial, so no claim runs while another is open."""
    # Given a group g of two messages and a group h of one
    store, other = open_store(store_url), open_store(store_url)
    try:
        engine = Engine(store, clock)
        engine.create_queue(P, "q.fifo", settings=QueueSettings(fifo=True))
        for body, group in (("a", "g"), ("b", "g"), ("c", "h")):
            engine.send(P, "q.fifo", messages=[NewMessage(body.encode(), group_id=group,
                                                 deduplication_id=body)])  # fmt: skip
        queue = engine.get_queue(P, "q.fifo")
        # When one consumer is taking the head of g, its transaction still open
        with store.transaction() as tx:
            taken = fifo.claimable(tx, queue, clock.now(), 1)
            got: list[bytes] = []
            meanwhile = threading.Thread(
                target=lambda: got.extend(
                    m.body for m in Engine(other, clock).claim(P, "q.fifo", limit=10).messages
                )
            )
            meanwhile.start()
            meanwhile.join()
        # Then a second consumer gets only the other group, not the rest of g
        assert [m.body for m in taken] == [b"a"]
        assert got == [b"c"]
    finally:
        store.close()
        other.close()
