"""Alerts raised when a DLQ's patterns are stored: a new pattern, a pattern whose rate jumped;
each a notification to the DLQ's subscribers, an engine event and a stamp on the pattern."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deadletter.domain import errors
from deadletter.engine import patterns as rules
from deadletter.engine.deliveries import Deliveries
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from tests.engine.helpers import P, with_dlq
from tests.engine.test_subscriptions_delivery import SETTINGS, round_
from tests.support.receivers import allow_local, receiving


class Alerts(EngineListener):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []

    def pattern_alerts(self, project: str, dlq: str, kind: str, count: int) -> None:
        self.seen.append((dlq, kind, count))


@pytest.fixture
def runner(engine: Engine) -> Iterator[Deliveries]:
    deliveries = Deliveries(engine, allow_local(engine), SETTINGS)
    yield deliveries
    deliveries.stop()


def deliver_all(engine: Engine, runner: Deliveries) -> None:
    while engine.subscriptions.pending(P, "dlq"):
        round_(runner)


def pattern(pid: str, count: int = 1, rate: float | None = None) -> dict[str, Any]:
    ids = [f"m-{pid}-{i}" for i in range(count)]
    return {"id": pid, "template": f"failure {pid}", "signature": "E", "count": count,
            "rate_per_minute": rate, "message_ids": ids}  # fmt: skip


def test_a_new_pattern_is_posted_to_the_dlq_subscribers_once(
    engine: Engine, runner: Deliveries
) -> None:
    # Given a DLQ with a subscriber and three stored patterns
    with_dlq(engine, "orders", "dlq")
    alerts = Alerts()
    engine._runner.listeners.append(alerts)
    with receiving() as hook:
        engine.subscriptions.create(P, "dlq", subscriber=hook.url, ttl=600, options={})
        assert engine.save_patterns(P, "dlq", found=[pattern("a"), pattern("b"), pattern("c")])
        deliver_all(engine, runner)
        assert len(hook.posts) == 3
        # When the same three are stored again with a fourth
        raised = engine.save_patterns(
            P, "dlq", found=[pattern("a", 2), pattern("b"), pattern("c"), pattern("d", 3)]
        )
        deliver_all(engine, runner)
        # Then the fourth alone is new, and its alert names its template, count and examples
        assert raised == [("new", "d")]
        assert len(hook.posts) == 4
        body = hook.posts[-1][1]
    assert body["queue_name"] == "dlq" and body["Message_Type"] == "Notification"
    alert = body["body"]
    assert (alert["event"], alert["kind"], alert["queue"]) == ("pattern_alert", "new", "dlq")
    assert alert["pattern"]["template"] == "failure d" and alert["pattern"]["count"] == 3
    assert alert["pattern"]["example_message_ids"] == ["m-d-0", "m-d-1", "m-d-2"]
    assert alerts.seen == [("dlq", "new", 3), ("dlq", "new", 1)]
    stamps = {p["id"]: p["alert"]["kind"] for p in engine.get_patterns(P, "dlq")}
    assert stamps == {"a": "new", "b": "new", "c": "new", "d": "new"}  # kept from the first


@given(
    before=st.one_of(st.none(), st.floats(0, 1000)),
    after=st.one_of(st.none(), st.floats(0, 1000)),
)
@settings(max_examples=200, deadline=None)
def test_a_rate_jump_is_three_times_the_stored_rate_and_ten_a_minute(
    before: float | None, after: float | None
) -> None:
    kind = rules.alert_kind(pattern("a", rate=before), pattern("a", rate=after))
    jumped = (
        before is not None and after is not None
        and after >= 10 and after >= 3 * before and after > before
    )  # fmt: skip
    assert kind == ("rate_jump" if jumped else None)


def test_a_rate_jump_alerts_and_a_steady_rate_does_not(engine: Engine) -> None:
    with_dlq(engine, "orders", "dlq")
    engine.save_patterns(P, "dlq", found=[pattern("a", rate=4.0)])
    assert engine.save_patterns(P, "dlq", found=[pattern("a", rate=11.0)]) == []  # under 3x
    assert engine.save_patterns(P, "dlq", found=[pattern("a", rate=40.0)]) == [("rate_jump", "a")]
    (stored,) = engine.get_patterns(P, "dlq")
    assert stored["alert"]["kind"] == "rate_jump"


@pytest.mark.parametrize("rate", [-1, "fast", float("inf"), True])
def test_a_rate_that_is_not_a_number_is_refused_before_anything_is_stored(
    engine: Engine, rate: Any
) -> None:
    with_dlq(engine, "orders", "dlq")
    with pytest.raises(errors.InvalidInput):
        engine.save_patterns(P, "dlq", found=[pattern("a", rate=rate)])
    assert engine.get_patterns(P, "dlq") == []


def test_a_writer_cannot_set_the_alert_stamp(engine: Engine) -> None:
    with_dlq(engine, "orders", "dlq")
    engine.save_patterns(P, "dlq", found=[pattern("a")])
    forged = {**pattern("a"), "alert": {"kind": "rate_jump", "at": "x"}}
    engine.save_patterns(P, "dlq", found=[forged])
    (stored,) = engine.get_patterns(P, "dlq")
    assert stored["alert"]["kind"] == "new"
