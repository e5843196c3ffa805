"""A canary that samples every kind: a minority failure hidden inside a failure pattern is in
the sample, so the redrive pauses, whatever the DLQ's order.

Given a pattern `The <*> is invalid <*>` of 1,000 dead letters, 980 of them `The format is
invalid: csv.` and the like (fixed since: their consumer now handles them) and 20 `The
repartition parameter 289 is invalid: cannot be null.` (still failing), placed at random in
the DLQ, when a canary of ten runs over the pattern, one of the twenty is among the sample and
the task pauses. Twenty canaries run in turn, each with its own seed, over what the one before
left (its sample handled or dead again). The first ten of the DLQ, as the canary once took
them, hold one of the twenty in about one run of five.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import DeadLetterFilter
from deadletter.domain.provenance import ErrorDetails
from deadletter.domain.redrive import Canary, TaskStatus
from deadletter.engine import canary as canary_module
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, fail, send, with_dlq

pytestmark = pytest.mark.one_store

WATCH = 60.0
SIZE = 1000
MINORITY = 20
FORMATS = ("csv", "tsv", "xml", "yaml", "parquet", "avro", "orc", "json")
PATTERN = "p-mixed"
FAILING = "repartition"


def _error(kind: str) -> str:
    if kind == FAILING:
        return "The repartition parameter 289 is invalid: cannot be null."
    return f"The format is invalid: {kind}."


def given_a_mixed_pattern(engine: Engine, seed: int, **stored: object) -> None:
    """Source "a" and its DLQ "dlq" holding SIZE dead letters of one stored pattern, MINORITY
    of them of the failure not yet fixed, placed at random; `stored` adds fields to the
    stored pattern."""
    rng = random.Random(seed)
    with_dlq(engine, "a", "dlq", max_claims=1)
    minority = [True] * MINORITY + [False] * (SIZE - MINORITY)
    rng.shuffle(minority)
    # The DLQ's order, in runs of one kind: each fixed run one format, each failing one alone.
    runs: list[tuple[str, int]] = []
    for failing in minority:
        if failing:
            runs.append((FAILING, 1))
        elif runs and runs[-1][0] != FAILING:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((rng.choice(FORMATS), 1))
    send(engine, "a", *[json.dumps({"kind": k}) for k, n in runs for _ in range(n)])
    claim = engine.claim(P, "a", limit=SIZE)
    held = iter(claim.messages)
    ids: list[str] = []
    for kind, n in runs:
        pairs = [(next(held).id, claim.id) for _ in range(n)]
        ids += [m.id for m in engine.dead_letter(P, "a", held=pairs, error=_error(kind))]
    assert len(ids) == SIZE
    _store_pattern(engine, ids, **stored)


def _store_pattern(engine: Engine, ids: list[str], **stored: object) -> None:
    pattern = {"id": PATTERN, "template": "The <*> is invalid <*>", "count": len(ids)}
    engine.save_patterns(P, "dlq", found=[{**pattern, "message_ids": ids, **stored}])


def _members(engine: Engine) -> list[str]:
    (pattern,) = engine.get_patterns(P, "dlq")
    return list(pattern["message_ids"])


def _consume(engine: Engine) -> list[str]:
    """The source's consumer: the fixed kinds are handled, the other fails again (back in
    the DLQ, as it was); the ids of those that failed."""
    claim = engine.claim(P, "a", limit=SIZE)
    failing = [m for m in claim.messages if json.loads(m.body)["kind"] == FAILING]
    done = [m.id for m in claim.messages if m not in failing]
    if done:
        engine.delete_messages(P, "a", ids=done)
    if not failing:
        return []
    pairs = [(m.id, claim.id) for m in failing]
    return [m.id for m in engine.dead_letter(P, "a", held=pairs, error=_error(FAILING))]


def redrive_with_canary(engine: Engine, clock: ManualClock, canary: Canary) -> TaskStatus:
    """The pattern redriven with `canary`: the sample moves, the consumer handles what it
    can, the watch ends; where the task stands then. The task is then cancelled and the
    pattern stored again over what the DLQ holds of it, for the next canary."""
    ids = _members(engine)
    task = engine.start_redrive(P, "dlq", where=DeadLetterFilter(pattern_id=PATTERN), canary=canary)
    task = engine.redrive_step(task.id, SIZE)
    assert task.canary is not None and task.canary.sample == canary.count
    back = _consume(engine)
    clock.advance(WATCH)
    verdict = engine.redrive_step(task.id, 1).status  # a pass moves one more at most
    if engine.cancel_redrive(P, "dlq", task_id=task.id).status is TaskStatus.CANCELLING:
        assert engine.redrive_step(task.id, SIZE).status is TaskStatus.CANCELLED
    sampled = set(task.canary.sample_ids)
    _store_pattern(engine, [i for i in ids if i not in sampled] + back)
    return verdict


def test_a_two_percent_minority_failure_pauses_the_redrive_in_every_seeded_run(
    engine: Engine, clock: ManualClock
) -> None:
    given_a_mixed_pattern(engine, seed=0)
    verdicts = [
        redrive_with_canary(
            engine, clock, Canary(count=10, watch=WATCH, pattern_id=PATTERN, seed=run)
        )
        for run in range(20)
    ]
    assert verdicts.count(TaskStatus.PAUSED) >= 19


def test_the_task_says_what_its_sample_covers(engine: Engine) -> None:
    given_a_mixed_pattern(engine, seed=1)
    ids = _members(engine)
    canary = Canary(count=10, watch=WATCH, seed=7)  # the filter names the pattern
    task = engine.start_redrive(P, "dlq", where=DeadLetterFilter(pattern_id=PATTERN), canary=canary)
    c = task.canary
    assert c is not None and len(c.plan) == 10 and set(c.plan) <= set(ids)
    # Two values at the first position (format, repartition parameter 289), nine at the
    # second (eight formats, "cannot be null"), nine combinations: all in a sample of ten.
    assert (c.drawn_by, c.kinds, c.kinds_covered) == ("pattern", 11, 11)
    assert (c.combinations, c.combinations_covered) == (9, 9)
    assert c.coverage == (
        "10 dead letters drawn across 11 of 11 kinds:"
        " covers 100% of the pattern's value combinations (9 of 9)"
    )
    # The seed is kept: the same draw again is the same sample.
    assert engine.get_task(P, "dlq", task_id=task.id).canary == c


@pytest.mark.parametrize(
    "flag",
    [{"impure": True}, {"purity": 0.6}, {"purity": {"score": 0.95, "impure": True}}],
    ids=["flag", "score", "both"],
)
def test_a_pattern_flagged_impure_is_refused_a_canary_unless_forced(
    engine: Engine, flag: dict[str, object]
) -> None:
    given_a_mixed_pattern(engine, seed=2, **flag)
    where = DeadLetterFilter(pattern_id=PATTERN)
    canary = Canary(count=10, watch=WATCH, pattern_id=PATTERN)
    with pytest.raises(errors.PatternImpure, match=f"pattern {PATTERN} is flagged impure"):
        engine.start_redrive(P, "dlq", where=where, canary=canary)
    assert engine.list_tasks(P, "dlq") == []
    forced = engine.start_redrive(P, "dlq", where=where, canary=replace(canary, force=True))
    assert forced.canary is not None and forced.canary.force and len(forced.canary.plan) == 10


@pytest.mark.parametrize("flag", [{}, {"purity": 0.97}, {"impure": False, "purity": 0.2}])
def test_a_pattern_not_flagged_impure_takes_a_canary(
    engine: Engine, flag: dict[str, object]
) -> None:
    given_a_mixed_pattern(engine, seed=3, **flag)
    canary = Canary(count=10, watch=WATCH, pattern_id=PATTERN)
    task = engine.start_redrive(P, "dlq", where=DeadLetterFilter(pattern_id=PATTERN), canary=canary)
    assert task.canary is not None and task.canary.drawn_by == "pattern"


def test_without_a_pattern_the_sample_is_drawn_across_error_classes_and_texts(
    engine: Engine,
) -> None:
    # Given 196 dead letters of one error and 4 of another class, the 4 sent last
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", *[f"m{i}" for i in range(200)])
    claim = engine.claim(P, "a", limit=200)
    pairs = [(m.id, claim.id) for m in claim.messages]
    timeout = ErrorDetails("read timed out after 30 s", "java.net.SocketTimeoutException")
    engine.dead_letter(P, "a", held=pairs[:196], error=timeout)
    broken = ErrorDetails("Unexpected character 'x' at 12", "JsonParseException")
    rare = {m.id for m in engine.dead_letter(P, "a", held=pairs[196:], error=broken)}
    # A canary of two takes one of each
    for seed in range(5):
        task = engine.start_redrive(P, "dlq", canary=Canary(count=2, watch=WATCH, seed=seed))
        assert task.canary is not None and task.canary.drawn_by == "errors"
        assert len(rare & set(task.canary.plan)) == 1
        assert task.canary.coverage == (
            "2 dead letters drawn across 4 of 4 kinds:"
            " covers 100% of the selection's error kinds (2 of 2)"
        )
        assert engine.cancel_redrive(P, "dlq", task_id=task.id).status is TaskStatus.CANCELLING
        engine.redrive_step(task.id, 1)


def test_dead_letters_without_an_error_are_drawn_at_random(engine: Engine) -> None:
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", *[f"m{i}" for i in range(50)])
    fail(engine, "a", 1)
    engine.claim(P, "a", limit=1000)  # over their one delivery: all move to the DLQ, unexplained
    plans = []
    for seed in (1, 1, 2):
        task = engine.start_redrive(P, "dlq", canary=Canary(count=5, watch=WATCH, seed=seed))
        assert task.canary is not None and task.canary.drawn_by == "random"
        assert task.canary.coverage == (
            "5 dead letters drawn at random: no error text to tell kinds apart"
        )
        plans.append(task.canary.plan)
        engine.cancel_redrive(P, "dlq", task_id=task.id)
        engine.redrive_step(task.id, 1)
    # Reproducible by its seed, and not the first five of the DLQ
    first = tuple(m.id for m in engine.list_dead_letters(P, "dlq", limit=5))
    assert plans[0] == plans[1] != plans[2]
    assert set(plans[0]) != set(first)


def test_past_its_scan_the_draw_reads_runs_spread_over_the_dlq(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a scan of 100 in runs of 10 (20,000 in runs of 500 in earnest) and 300 dead letters
    monkeypatch.setattr(canary_module, "MAX_SCAN", 100)
    monkeypatch.setattr(canary_module, "SCAN_RUN", 10)
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", *[f"m{i}" for i in range(300)])
    fail(engine, "a", 1)
    engine.claim(P, "a", limit=1000)
    order = [m.id for m in engine.list_dead_letters(P, "dlq", limit=300)]
    # A canary of 100 draws from ten runs of ten across the whole DLQ
    task = engine.start_redrive(P, "dlq", canary=Canary(count=100, watch=WATCH, seed=1))
    assert task.canary is not None and task.canary.coverage == (
        "100 dead letters drawn at random: no error text to tell kinds apart"
        " (kinds learnt from 100 of 300)"
    )
    places = sorted(order.index(i) for i in task.canary.plan)
    assert places[0] < 30 and places[-1] >= 270
    assert len({p // 30 for p in places}) == 10


def test_a_filter_the_engine_evaluates_bounds_the_draw(engine: Engine) -> None:
    # Given 20 timeouts and 20 parse errors, a canary over the timeouts draws timeouts only
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", *[f"m{i}" for i in range(40)])
    claim = engine.claim(P, "a", limit=40)
    pairs = [(m.id, claim.id) for m in claim.messages]
    timeout = ErrorDetails("read timed out after 30 s", "java.net.SocketTimeoutException")
    timeouts = {m.id for m in engine.dead_letter(P, "a", held=pairs[::2], error=timeout)}
    broken = ErrorDetails("Unexpected character 'x' at 12", "JsonParseException")
    engine.dead_letter(P, "a", held=pairs[1::2], error=broken)
    where = DeadLetterFilter(error_contains="timed out")
    task = engine.start_redrive(P, "dlq", where=where, canary=Canary(count=5, watch=WATCH))
    assert task.to_move == 20 and task.canary is not None
    assert len(task.canary.plan) == 5 and set(task.canary.plan) <= timeouts
    assert task.canary.coverage is not None and "covers 100%" in task.canary.coverage
