"""Many claimants at once, in threads and in processes, each with its own store connection:
no message is handed out twice while its claim is live, and the counts stay exact."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import Counter

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.engine.helpers import P, with_dlq

MESSAGES = 400
CLAIM_TTL = 600  # longer than the test: every claim stays live


def _prepare(url: str, dead_letter: bool = False) -> None:
    store = open_store(url)
    try:
        engine = Engine(store)
        if dead_letter:
            with_dlq(engine, "q", "dlq", max_claims=1)
        else:
            engine.create_queue(P, "q")
        for start in range(0, MESSAGES, 100):
            engine.send(
                P,
                "q",
                messages=[NewMessage(body=str(i).encode()) for i in range(start, start + 100)],
            )
    finally:
        store.close()


def _drain(url: str, batch: int = 7) -> list[str]:
    """Claim until the queue is empty; the ids this claimant got."""
    store = open_store(url)
    try:
        engine = Engine(store)
        got: list[str] = []
        while True:
            claim = engine.claim(P, "q", limit=batch, ttl=CLAIM_TTL)
            if not claim.messages:
                return got
            got += [m.id for m in claim.messages]
    finally:
        store.close()


def _check(url: str, claimed: list[str]) -> None:
    repeats = [mid for mid, n in Counter(claimed).items() if n > 1]
    assert repeats == [], f"{len(repeats)} messages were handed out twice"
    store = open_store(url)
    try:
        stats = Engine(store).stats(P, "q")
        assert len(claimed) == MESSAGES
        assert (stats.claimed, stats.free, stats.total) == (MESSAGES, 0, MESSAGES)
    finally:
        store.close()


def test_threads_never_share_a_message(store_url: str) -> None:
    _prepare(store_url)
    results: list[list[str]] = [[] for _ in range(8)]

    def run(i: int) -> None:
        results[i] = _drain(store_url)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _check(store_url, [mid for r in results for mid in r])


@pytest.mark.slow
def test_processes_never_share_a_message(store_url: str) -> None:
    _prepare(store_url)
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_drain, [store_url] * 4)
    _check(store_url, [mid for r in results for mid in r])


def _move_all(url: str) -> int:
    """Claim from a queue where every message is due to move; returns deliveries (none)."""
    store = open_store(url)
    try:
        engine = Engine(store)
        delivered = 0
        while True:
            claim = engine.claim(P, "q", limit=10, ttl=CLAIM_TTL)
            delivered += len(claim.messages)
            if engine.stats(P, "q").total == 0:
                return delivered
    finally:
        store.close()


def test_concurrent_dead_letter_moves_happen_exactly_once(store_url: str) -> None:
    _prepare(store_url, dead_letter=True)
    # First delivery of every message, by one-second claims left to lapse (and no sweep
    # runs): each is now due to move on its next claim.
    store = open_store(store_url)
    engine = Engine(store)
    start = time.time()
    at_start = Engine(store, ManualClock(start))
    while at_start.claim(P, "q", limit=100, ttl=1).messages:
        pass
    while time.time() <= start + 1:
        time.sleep(0.05)
    assert engine.stats(P, "q").free == MESSAGES
    results: list[int] = [0] * 6

    def run(i: int) -> None:
        results[i] = _move_all(store_url)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert sum(results) == 0  # nothing delivered a second time
        dead = engine.list_dead_letters(P, "dlq", limit=1000)
        assert len(dead) == len({m.id for m in dead}) == MESSAGES
        assert engine.stats(P, "q").dead_lettered == {"max_claims": MESSAGES}
        assert engine.stats(P, "dlq").by_source == {"q": MESSAGES}
    finally:
        store.close()


TAGGERS = 16


def test_concurrent_settings_changes_keep_every_tag(engine: Engine) -> None:
    """Many threads each add their own tag to one queue at once: every tag is there at the end.

    `change_settings` reads and writes in one transaction. The former pattern loses updates:

        q = engine.get_queue(P, "q")
        engine.update_queue(P, "q", q.settings.with_changes(labels={**q.settings.labels, tag: "x"}))

    Two threads read the same tags and the later write drops the earlier one's tag; this test
    written that way fails on both stores, with a single tag of the 16 left.

    On PostgreSQL one transaction is not enough either: at READ COMMITTED two transactions
    would read the queue row unlocked, so `change_settings` reads it with `lock=True`.
    """
    engine.create_queue(P, "q")
    start = threading.Barrier(TAGGERS)

    def tag(i: int) -> None:
        start.wait()
        engine.change_settings(
            P,
            "q",
            change=lambda q: q.settings.with_changes(labels={**q.settings.labels, f"t{i}": "x"}),
        )

    threads = [threading.Thread(target=tag, args=(i,)) for i in range(TAGGERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tags = engine.get_queue(P, "q").settings.labels
    assert sorted(tags) == sorted(f"t{i}" for i in range(TAGGERS))
