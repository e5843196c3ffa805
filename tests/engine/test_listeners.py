"""Listeners run after the commit: one that fails is logged and counted, and the operation it
heard about still answers normally (a client told "error" after a saved send would send twice)."""

from __future__ import annotations

import logging

import pytest

from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from tests.engine.helpers import P, send, with_dlq


class Broken(EngineListener):
    """Raises on every event of an operation. (Wake-ups are left alone: PostgreSQL also
    delivers them from its notification thread, at a time of its own.)"""

    def __init__(self) -> None:
        self.heard = 0

    def _fail(self) -> None:
        self.heard += 1
        raise RuntimeError("listener down")

    def sent(self, project: str, queue: str, count: int) -> None:
        self._fail()

    def claimed(self, project: str, queue: str, count: int) -> None:
        self._fail()

    def dead_lettered(self, project: str, source: str, dlq: str, reason: str, count: int) -> None:
        self._fail()


class Counting(EngineListener):
    def __init__(self) -> None:
        self.sent_count = 0

    def sent(self, project: str, queue: str, count: int) -> None:
        self.sent_count += count


def test_a_failing_listener_neither_fails_nor_repeats_the_operation(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a queue with a DLQ and a listener that raises on every event, before a healthy one
    with_dlq(engine, "orders", "orders-dlq", max_claims=1)
    broken, counting = Broken(), Counting()
    engine.add_listener(broken)
    engine.add_listener(counting)

    # When a message is sent, claimed and dead-lettered
    with caplog.at_level(logging.ERROR, logger="deadletter.engine.transactions"):
        (sent,) = send(engine, "orders", "a")
        claim = engine.claim(P, "orders", limit=10)
        moved = engine.dead_letter(P, "orders", held=[(sent.id, claim.id)], description="bad")

    # I expect every call to have answered, the message stored once and moved once
    assert [m.id for m in claim.messages] == [sent.id]
    assert [m.queue for m in moved] == ["orders-dlq"]
    assert engine.stats(P, "orders").total == 0
    assert engine.stats(P, "orders-dlq").total == 1
    # and every failure counted, logged with its traceback, without keeping the others from it
    assert broken.heard == 3  # sent, claimed, dead_lettered
    assert engine.listener_failures == 3
    assert counting.sent_count == 1
    failures = [r for r in caplog.records if r.name == "deadletter.engine.transactions"]
    assert len(failures) == 3
    assert all(r.exc_info and r.exc_info[0] is RuntimeError for r in failures)
