"""A redrive task is stepped by one worker for every project, so a task that cannot be stepped
must never be stored, and one that fails anyway must fail alone."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from deadletter.domain import errors
from deadletter.domain.model import DeadLetterFilter, NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.redrive import TaskStatus
from deadletter.engine import redrive
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from tests.api.zaqar.conftest import ApiClient
from tests.engine.helpers import P, with_dlq
from tests.hardening.conftest import refused


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"rate": Infinity}', "could not be parsed as JSON"),
        ('{"rate": NaN}', "could not be parsed as JSON"),
        ('{"rate": 1e400}', "could not be parsed as JSON"),
        ('{"rate": 0}', "rate must be more than 0"),
        ('{"rate": 1e7}', "rate must be more than 0"),
        ('{"since": 1e300}', "since must be a time"),
        ('{"since": -1e20}', "since must be a time"),
        ('{"until": NaN}', "could not be parsed as JSON"),
        ('{"since": "1e400"}', "since must be a time"),
        ('{"until": "99999-01-01"}', "until must be an ISO 8601 time"),
    ],
)
def test_redrive_values_that_cannot_be_stepped_are_refused_before_the_task_is_saved(
    api: ApiClient, untouched: Callable[[], None], body: str, words: str
) -> None:
    r = api.post(
        "/v2/queues/orders-dlq/redrives",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    refused(r, 400, words)
    assert api.get("/v2/queues/orders-dlq/redrives").json() == {"redrives": []}
    untouched()


def test_a_redrive_lists_at_most_ten_thousand_ids(
    api: ApiClient, untouched: Callable[[], None]
) -> None:
    ids = [f"m{i}" for i in range(10_001)]
    r = api.post("/v2/queues/orders-dlq/redrives", json={"message_ids": ids})
    refused(r, 400, "at most 10000")
    assert api.get("/v2/queues/orders-dlq/redrives").json() == {"redrives": []}
    untouched()


@pytest.mark.parametrize(
    ("rate", "where"),
    [
        (float("inf"), DeadLetterFilter()),
        (float("nan"), DeadLetterFilter()),
        (None, DeadLetterFilter(since=float("inf"))),
    ],
)
def test_the_engine_refuses_what_the_worker_could_not_step(
    engine: Engine, rate: float | None, where: DeadLetterFilter
) -> None:
    with_dlq(engine, "a", "dlq", max_claims=1)
    with pytest.raises(errors.InvalidInput, match=r"rate|since"):
        engine.start_redrive(P, "dlq", where=where, rate=rate)
    assert engine.list_tasks(P, "dlq") == []


def dead_letters(engine: Engine, project: str, n: int) -> None:
    """`n` dead letters in `project`'s queue `dlq`, from `a`."""
    engine.create_queue(project, "dlq")
    engine.create_queue(
        project,
        "a",
        settings=QueueSettings(dead_letter=DeadLetterPolicy(target="dlq", max_claims=1)),
    )
    engine.send(project, "a", messages=[NewMessage(body=str(i).encode()) for i in range(n)])
    claim = engine.claim(project, "a", limit=100)
    engine.release_claim(project, "a", claim_id=claim.id)
    engine.claim(project, "a", limit=100)
    assert engine.stats(project, "dlq").total == n


def test_a_poisoned_task_fails_alone_and_other_projects_redrives_go_on(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a task stored with a rate no step can pace (as an older server could store it)
    dead_letters(engine, "poisoned", 2)
    good = engine.start_redrive("poisoned", "dlq")
    bad = replace(good, rate=float("inf"))
    with engine.store.transaction() as tx:
        tx.update_task(bad)
    # and a healthy task in another project,
    dead_letters(engine, "healthy", 3)
    healthy = engine.start_redrive("healthy", "dlq")
    # when the worker runs,
    worker = Worker(engine)
    with caplog.at_level(logging.ERROR, logger="deadletter.worker"):
        for _ in range(3):
            worker.run_once()
    # the poisoned task is FAILED with its error, logged with a traceback,
    failed = engine.get_task("poisoned", "dlq", task_id=bad.id)
    assert failed.status is TaskStatus.FAILED
    assert "OverflowError" in (failed.failure_reason or "")
    assert any(r.exc_info for r in caplog.records)
    assert engine.stats("poisoned", "dlq").total == 2
    # and the healthy one completed.
    done = engine.get_task("healthy", "dlq", task_id=healthy.id)
    assert (done.status, done.moved) == (TaskStatus.COMPLETED, 3)
    assert engine.stats("healthy", "a").total == 3


def test_a_step_that_raises_fails_its_task_only(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead_letters(engine, "one", 1)
    dead_letters(engine, "two", 1)
    first = engine.start_redrive("one", "dlq")
    second = engine.start_redrive("two", "dlq")
    real_step = redrive.step

    def step(tx: Any, pending: Any, task_id: str, budget: int, now: float) -> Any:
        if task_id == first.id:
            raise RuntimeError("boom")
        return real_step(tx, pending, task_id, budget, now)

    monkeypatch.setattr(redrive, "step", step)
    worker = Worker(engine)
    worker.run_once()
    worker.run_once()
    failed = engine.get_task("one", "dlq", task_id=first.id)
    assert failed.status is TaskStatus.FAILED and "boom" in (failed.failure_reason or "")
    assert engine.get_task("two", "dlq", task_id=second.id).status is TaskStatus.COMPLETED
