"""A DLQ read by source queue (the statements' variant of `queries.by_source`, through the
index of migration 0016) returns exactly the dead letters of that source that the same read
without the source returns, in the same order: listings visible only or with claimed and
delayed ones, reads for a redrive locked or not, their sources, counts, page by page."""

from __future__ import annotations

import random
import uuid

import pytest

from deadletter.domain.model import (
    DeadLetterFilter,
    ListQuery,
    Message,
    NewMessage,
    Queue,
    QueueSettings,
)
from deadletter.domain.provenance import Reason
from deadletter.engine import transitions
from deadletter.storage.base import Store

NOW = 1_000.0
SOURCES = ("a", "b", "c")
DLQ = Queue("p", "dlq", QueueSettings(), NOW, NOW)


def fill(store: Store, seed: int) -> None:
    """60 dead letters from three sources and their consumer tags in a random order; some
    claimed, some delayed, some whose claim or delay has ended, as a DLQ's consumers leave
    them."""
    rng = random.Random(seed)
    messages = []
    for _ in range(60):
        m = transitions.enqueued(
            NewMessage(body=b"x"),
            message_id=uuid.uuid4().hex,
            queue="src",
            now=NOW - 100,
            ttl=3600,
            delay=0,
            eligible=True,
            client_id=None,
        )
        source = Queue("p", rng.choice(SOURCES), QueueSettings(), NOW, NOW)
        tag = rng.choice((None, "t", "u"))
        m = transitions.dead_lettered(
            m, source=source, dlq=DLQ, reason=Reason.MAX_CLAIMS, now=NOW - 50, source_tag=tag
        )
        state = rng.choice(("free", "claimed", "lapsed", "delayed", "shown"))
        if state in ("claimed", "lapsed"):
            until = NOW + 60 if state == "claimed" else NOW - 1
            m = transitions.claimed(
                m, claim_id=uuid.uuid4().hex, now=NOW - 40, expires=until, grace=60
            )
        elif state in ("delayed", "shown"):
            m = transitions.unclaimed(m, NOW - 40, 100 if state == "delayed" else 39)
        messages.append(m)
    with store.transaction() as tx:
        tx.insert_messages("p", messages)


def pages(read: object, limit: int) -> list[Message]:
    """Every message `read(after_seq, limit)` returns, page after page."""
    out: list[Message] = []
    while True:
        page = read(len(out) and out[-1].seq, limit)  # type: ignore[operator]
        out += page
        if len(page) < limit:
            return out


def of(m: Message, where: DeadLetterFilter) -> bool:
    """Whether dead letter `m` is of `where`'s source queue (and consumer tag, if it names one)."""
    p = m.provenance
    return (
        p is not None
        and p.source_queue == where.source_queue
        and (where.source_tag is None or p.source_tag == where.source_tag)
    )


FILTERS = [
    DeadLetterFilter(source_queue=source, source_tag=tag)
    for source in SOURCES
    for tag in (None, "t")
]


@pytest.mark.parametrize("seed", range(3))
def test_a_dlq_read_by_source_is_the_unfiltered_read_narrowed(store: Store, seed: int) -> None:
    fill(store, seed)
    top = 1 << 62
    every = DeadLetterFilter()
    unlocked: dict[DeadLetterFilter, list[str]] = {}
    with store.read() as tx:

        def listing(where: DeadLetterFilter, claimed: bool) -> list[Message]:
            def read(after: int, limit: int) -> list[Message]:
                query = ListQuery(after, limit, claimed, claimed, dead_letters=where)
                return tx.list_messages("p", "dlq", NOW, query)

            return pages(read, 7)

        def dead(where: DeadLetterFilter) -> list[Message]:
            return pages(
                lambda after, limit: tx.dead_letters(
                    "p", "dlq", NOW, where, top, limit, False, after
                ),
                7,
            )

        for one in FILTERS:
            for claimed in (False, True):
                narrowed = listing(one, claimed)
                assert [m.id for m in narrowed] == [
                    m.id for m in listing(every, claimed) if of(m, one)
                ]
            # A count is of every unexpired dead letter of the source, claimed ones included.
            assert tx.count_dead_letters("p", "dlq", NOW, one, top) == len(narrowed)
            unlocked[one] = [m.id for m in dead(every) if of(m, one)]
            assert [m.id for m in dead(one)] == unlocked[one]
    with store.transaction() as tx:
        for one in FILTERS:
            locked = tx.dead_letters("p", "dlq", NOW, one, top, 100, True)
            sources = tx.dead_letter_sources("p", "dlq", NOW, one, top, 100, 0)
            assert [m.id for m in locked] == unlocked[one]
            assert [(m.id, m.seq, m.provenance.source_queue) for m in locked if m.provenance] == [
                s[:3] for s in sources
            ]
