"""A queue and a project hold at most so many subscriptions, however many creators race for
the last places, on every store."""

from __future__ import annotations

import threading

import pytest

from deadletter.domain import errors
from deadletter.engine import subscriptions
from deadletter.engine.engine import Engine
from tests.support.receivers import allow_local

PER_QUEUE, PER_PROJECT = 4, 6


@pytest.fixture
def small(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Engine:
    monkeypatch.setattr(subscriptions, "SUBSCRIPTIONS_PER_QUEUE", PER_QUEUE)
    monkeypatch.setattr(subscriptions, "SUBSCRIPTIONS_PER_PROJECT", PER_PROJECT)
    allow_local(engine)
    return engine


def _subscribe(engine: Engine, project: str, queue: str, n: int) -> None:
    engine.subscriptions.create(
        project, queue, subscriber=f"http://127.0.0.1:9/{queue}/{n}", ttl=600, options={}
    )


def test_a_queue_holds_its_bound_and_no_more(small: Engine) -> None:
    small.create_queue("p", "q")
    for n in range(PER_QUEUE):
        _subscribe(small, "p", "q", n)
    with pytest.raises(errors.LimitExceeded, match="queue 'q'"):
        _subscribe(small, "p", "q", PER_QUEUE)
    # Subscribing a subscriber again is no new subscription: still answered.
    _subscribe(small, "p", "q", 0)


def test_racing_creators_never_pass_the_project_bound(small: Engine) -> None:
    # Given a project's queues, each to be subscribed to at once by two creators
    queues = [f"q{i}" for i in range(PER_PROJECT)]
    for q in queues:
        small.create_queue("p", q)
    outcomes: list[str] = []
    start = threading.Barrier(2 * len(queues))

    def create(queue: str, n: int) -> None:
        start.wait()
        try:
            _subscribe(small, "p", queue, n)
            outcomes.append("made")
        except errors.LimitExceeded:
            outcomes.append("refused")

    threads = [threading.Thread(target=create, args=(q, n)) for q in queues for n in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # I expect exactly the bound made, the rest refused, and another project unaffected
    assert outcomes.count("made") == PER_PROJECT, outcomes
    small.create_queue("other", "q0")
    _subscribe(small, "other", "q0", 0)
