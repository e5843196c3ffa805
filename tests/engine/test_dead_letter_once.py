"""Exactly one dead letter per message per consumer group, while consumers claim and the sweep
runs at once: a message whose last allowed claim lapsed is moved either by the group's next
claim or by the sweep, never by both.

Given a group (a consumer tag, or the untagged consumers) with max claims 1 that has claimed
every message of its queue and acknowledged none, when their claims have lapsed and several
consumers of the group claim while sweeps run, each in its own store connection, I expect one
dead letter per message in the DLQ, and the group's count of dead letters to say the same.
On PostgreSQL, before a claim locked the delivery states it decides on, the claim and the
sweep could both find a tag's message past its limit and both move it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.model import ListQuery, NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.engine.helpers import P, with_dlq

MESSAGES = 200
CLAIMERS = 4
SWEEPERS = 2
CLAIM_TTL = 2
# How long the race may take before the test gives up waiting for the DLQ to fill; it ends
# as soon as the DLQ is full, so the margin costs nothing on a quiet machine and keeps the
# test steady on a loaded one.
DEADLINE = 60.0

GROUPS = [pytest.param("t", id="tag"), pytest.param(None, id="default-group")]


def _dead_letter_ids(engine: Engine) -> list[str]:
    """The source message ids of every dead letter in the DLQ, one per copy."""
    out: list[str] = []
    after = 0
    while True:
        page = engine.list_messages(
            P, "orders-dlq", query=ListQuery(after_seq=after, limit=500, include_claimed=True)
        )
        if not page:
            return out
        out += [m.provenance.original_message_id for m in page if m.provenance is not None]
        after = page[-1].seq


def _loop(url: str, clock: ManualClock, stop: threading.Event, work: str, tag: str | None,
          errors: list[BaseException]) -> None:  # fmt: skip
    store = open_store(url)
    try:
        engine = Engine(store, clock)
        while not stop.is_set():
            if work == "claim":
                engine.claim(P, "orders", limit=10, ttl=CLAIM_TTL, tag=tag)
            else:
                engine.sweep_expired(limit=10)
    except BaseException as exc:  # reported by the test, not lost in a thread
        errors.append(exc)
    finally:
        store.close()


@pytest.mark.parametrize("tag", GROUPS)
def test_a_message_past_its_limit_is_dead_lettered_once_while_claims_and_sweeps_race(
    store_url: str, clock: ManualClock, tag: str | None
) -> None:
    store = open_store(store_url)
    try:
        engine = Engine(store, clock)
        # Given a group with max claims 1 that claimed every message and acknowledged none
        with_dlq(engine, max_claims=1)
        if tag is not None:
            engine.create_tag(P, "orders", name=tag)
        sent = {
            m.id
            for m in engine.send(
                P, "orders", messages=[NewMessage(body=b"%d" % i) for i in range(MESSAGES)]
            )
        }
        held: set[str] = set()
        while len(held) < MESSAGES:
            claim = engine.claim(P, "orders", limit=100, ttl=CLAIM_TTL, tag=tag)
            assert claim.messages, "every message is claimable once"
            held |= {m.id for m in claim.messages}
        assert held == sent
        # when their claims have lapsed, and consumers claim while sweeps run
        clock.advance(CLAIM_TTL + 1)
        stop = threading.Event()
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=_loop, args=(store_url, clock, stop, work, tag, errors))
            for work in ["claim"] * CLAIMERS + ["sweep"] * SWEEPERS
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + DEADLINE
        try:
            while time.monotonic() < deadline and not errors:
                if engine.stats(P, "orders-dlq").total >= MESSAGES:
                    break
                time.sleep(0.05)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        assert errors == []
        while engine.sweep_expired():
            pass
        # I expect exactly one dead letter per message
        copies = Counter(_dead_letter_ids(engine))
        twice = {mid: n for mid, n in copies.items() if n > 1}
        assert twice == {}, f"{len(twice)} messages were dead-lettered more than once"
        assert set(copies) == sent
        # and the group's count of its dead letters to agree
        if tag is None:
            assert sum(engine.stats(P, "orders").dead_lettered.values()) == MESSAGES
        else:
            (info,) = [i for i in engine.list_tags(P, "orders") if i.tag.name == tag]
            assert info.counts.dead_lettered == MESSAGES
    finally:
        store.close()
