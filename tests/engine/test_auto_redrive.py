"""Automatic redrive: a DLQ's policy sends a selection back every interval, each dead letter
at most `max_rounds` times, then keeps it with the reason; a canary that pauses a round pauses
the policy; a stop cancels the round in flight. Driven by the worker and a manual clock."""

from __future__ import annotations

import threading

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.auto_redrive import (
    EXHAUSTED_EVENT,
    AutoRedriveSpec,
    PolicyState,
    RoundOutcome,
    auto_rounds,
)
from deadletter.domain.model import DeadLetterFilter, ListQuery
from deadletter.domain.provenance import Reason
from deadletter.domain.redrive import Canary, TaskStatus
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage import open_store
from tests.engine.helpers import P, fail, send, with_dlq

INTERVAL = 600


@pytest.fixture
def three_dead(engine: Engine) -> Engine:
    """Given "a" whose DLQ is "dlq" (one delivery allowed) and three of its dead letters."""
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", "m0", "m1", "m2")
    _still_failing(engine, "a")
    assert engine.stats(P, "dlq").total == 3
    return engine


def _still_failing(engine: Engine, queue: str) -> None:
    """The consumer of `queue` fails every message: each goes (back) to the DLQ."""
    fail(engine, queue, 1)
    engine.claim(P, queue, limit=1000)


def _spec(**fields: object) -> AutoRedriveSpec:
    given: dict[str, object] = {"filter": DeadLetterFilter(), "interval": INTERVAL,
                                "max_rounds": 2, **fields}  # fmt: skip
    return AutoRedriveSpec(**given)  # type: ignore[arg-type]


def _turns(worker: Worker, n: int = 3) -> None:
    """A few of the worker's turns: a round starts, its task steps to its end, and the
    round's end is recorded."""
    for _ in range(n):
        worker.run_once()


def test_rounds_send_back_every_interval_then_keep_what_still_fails_with_the_reason(
    three_dead: Engine, clock: ManualClock
) -> None:
    engine, worker = three_dead, Worker(three_dead, sweep_interval=0)
    policy, created = engine.put_auto_redrive(P, "dlq", spec=_spec())
    assert created and policy.state is PolicyState.ACTIVE
    # The first round starts at once, as a redrive task of the DLQ, and moves all three.
    _turns(worker)
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.rounds == 1 and policy.last_round is not None
    task = engine.get_task(P, "dlq", task_id=policy.last_round.task_id or "")
    assert (task.status, task.moved) == (TaskStatus.COMPLETED, 3)
    assert engine.stats(P, "a").total == 3
    # They fail again; within the interval no round starts.
    _still_failing(engine, "a")
    clock.advance(INTERVAL - 1)
    worker.run_once()
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.rounds == 1 and policy.last_round is not None
    assert (policy.last_round.outcome, policy.last_round.moved) == (RoundOutcome.COMPLETED, 3)
    assert policy.moved == 3 and engine.stats(P, "dlq").total == 3
    # The second round, an interval after the first.
    clock.advance(1)
    _turns(worker)
    assert engine.get_auto_redrive(P, "dlq").rounds == 2
    assert engine.stats(P, "a").total == 3
    _still_failing(engine, "a")
    # The third finds each sent back twice (max_rounds): kept, marked once, no task started.
    clock.advance(INTERVAL)
    worker.run_once()
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.rounds == 2 and policy.exhausted == 3 and policy.last_round is not None
    assert policy.last_round.outcome is RoundOutcome.NOTHING_TO_REDRIVE
    assert (policy.last_round.kept, policy.last_round.eligible) == (3, 0)
    assert policy.state is PolicyState.ACTIVE
    kept = engine.list_dead_letters(P, "dlq", limit=100)
    assert len(kept) == 3
    for m in kept:
        assert auto_rounds(m.history) == 2
        assert m.history[-1]["event"] == EXHAUSTED_EVENT
        assert (m.history[-1]["rounds"], m.history[-1]["max_rounds"]) == (2, 2)
    assert len(engine.list_tasks(P, "dlq")) == 2
    # Later rounds keep them and do not mark them again.
    clock.advance(INTERVAL)
    worker.run_once()
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.exhausted == 3 and policy.last_round is not None
    assert policy.last_round.kept == 3
    for m in engine.list_dead_letters(P, "dlq", limit=100):
        assert sum(1 for e in m.history if e["event"] == EXHAUSTED_EVENT) == 1


def test_a_new_dead_letter_gets_its_own_rounds_beside_the_kept(
    three_dead: Engine, clock: ManualClock
) -> None:
    engine, worker = three_dead, Worker(three_dead, sweep_interval=0)
    engine.put_auto_redrive(P, "dlq", spec=_spec(max_rounds=1))
    _turns(worker)
    _still_failing(engine, "a")
    send(engine, "a", "fresh")
    _still_failing(engine, "a")
    clock.advance(INTERVAL)
    _turns(worker)
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.last_round is not None
    assert (policy.last_round.eligible, policy.last_round.kept) == (1, 3)
    assert policy.last_round.moved == 1 and policy.exhausted == 3
    [back] = engine.claim(P, "a", limit=10).messages
    assert back.body == b"fresh"


def test_the_filter_selects_what_a_round_sends_back(engine: Engine, clock: ManualClock) -> None:
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", "m0", "m1")
    claim = engine.claim(P, "a", limit=10)
    first, second = claim.messages
    engine.dead_letter(P, "a", held=[(first.id, claim.id)], error="TimeoutError: slow")
    engine.dead_letter(P, "a", held=[(second.id, claim.id)], error="KeyError: 'id'")
    where = DeadLetterFilter(error_class="TimeoutError", reason=Reason.REJECTED)
    engine.put_auto_redrive(P, "dlq", spec=_spec(filter=where))
    Worker(engine, sweep_interval=0).run_once()
    assert [m.body for m in engine.claim(P, "a", limit=10).messages] == [b"m0"]
    assert [m.body for m in engine.list_dead_letters(P, "dlq")] == [b"m1"]


def test_a_canary_that_pauses_a_round_pauses_the_policy_with_the_reason(
    three_dead: Engine, clock: ManualClock
) -> None:
    engine, worker = three_dead, Worker(three_dead, sweep_interval=0)
    engine.put_auto_redrive(P, "dlq", spec=_spec(canary=Canary(count=1, watch=60)))
    worker.run_once()
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.last_round is not None and policy.last_round.outcome is RoundOutcome.RUNNING
    assert (policy.last_round.moved, policy.moved) == (1, 1)  # shown while the round runs
    task_id = policy.last_round.task_id or ""
    assert engine.get_task(P, "dlq", task_id=task_id).moved == 1  # the sample, then the watch
    _still_failing(engine, "a")
    worker.run_once()  # the task's watch sees the sample dead again: paused
    assert engine.get_task(P, "dlq", task_id=task_id).status is TaskStatus.PAUSED
    worker.run_once()
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.state is PolicyState.PAUSED and policy.last_round is not None
    assert policy.last_round.outcome is RoundOutcome.PAUSED
    assert policy.reason == (
        f"round 1 (task {task_id}) was paused by its canary: 1 of 1 canaries died again"
    )
    # Paused, it starts no round however long it waits.
    clock.advance(INTERVAL * 3)
    worker.run_once()
    assert engine.get_auto_redrive(P, "dlq").rounds == 1
    assert engine.stats(P, "dlq").total == 3
    # Resumed (the cause fixed), a round starts at once.
    policy = engine.resume_auto_redrive(P, "dlq")
    assert (policy.state, policy.reason) == (PolicyState.ACTIVE, None)
    with pytest.raises(errors.AutoRedriveActive):
        engine.resume_auto_redrive(P, "dlq")
    worker.run_once()
    assert engine.get_auto_redrive(P, "dlq").rounds == 2


def test_a_stop_cancels_the_round_in_flight_and_starts_no_more(
    three_dead: Engine, clock: ManualClock
) -> None:
    engine, worker = three_dead, Worker(three_dead, sweep_interval=0)
    engine.put_auto_redrive(P, "dlq", spec=_spec(rate=1.0))
    worker.run_once()
    policy = engine.stop_auto_redrive(P, "dlq")
    assert (policy.state, policy.reason) == (PolicyState.STOPPED, "stopped by request")
    assert policy.last_round is not None and policy.last_round.outcome is RoundOutcome.CANCELLED
    worker.run_once()
    task = engine.get_task(P, "dlq", task_id=policy.last_round.task_id or "")
    assert task.status is TaskStatus.CANCELLED
    clock.advance(INTERVAL * 2)
    worker.run_once()
    assert engine.get_auto_redrive(P, "dlq").rounds == 1
    assert engine.stop_auto_redrive(P, "dlq").state is PolicyState.STOPPED  # no change
    # Deleted, it is gone.
    assert engine.delete_auto_redrive(P, "dlq") is True
    assert engine.delete_auto_redrive(P, "dlq") is False
    with pytest.raises(errors.AutoRedriveNotFound):
        engine.get_auto_redrive(P, "dlq")


def test_a_round_due_while_another_task_runs_on_the_dlq_is_skipped(
    three_dead: Engine, clock: ManualClock
) -> None:
    engine = three_dead
    manual = engine.start_redrive(P, "dlq", rate=0.001)
    engine.put_auto_redrive(P, "dlq", spec=_spec())
    engine.run_auto_redrives()
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.rounds == 0 and policy.last_round is not None
    assert policy.last_round.outcome is RoundOutcome.SKIPPED
    assert policy.last_round.reason == f"task {manual.id} was running on the DLQ"
    assert policy.next_due == clock.now() + INTERVAL


def test_a_round_that_cannot_start_pauses_the_policy(
    engine: Engine, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", "m0")
    _still_failing(engine, "a")
    engine.save_patterns(P, "dlq", found=[{"id": "p1", "message_ids": []}])
    engine.put_auto_redrive(P, "dlq", spec=_spec(filter=DeadLetterFilter(pattern_id="p1")))
    engine.save_patterns(P, "dlq", found=[])
    engine.run_auto_redrives()
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.state is PolicyState.PAUSED
    assert policy.reason is not None and policy.reason.startswith("a round could not start:")
    assert "p1" in policy.reason
    # and the server's log says so, once
    paused = [r for r in caplog.records if r.getMessage() == "automatic redrive paused"]
    assert len(paused) == 1 and paused[0].__dict__["reason"] == policy.reason


@pytest.mark.parametrize(
    ("fields", "refused"),
    [
        ({"interval": 59}, errors.OutOfRange),
        ({"interval": 7 * 86_400 + 1}, errors.OutOfRange),
        ({"max_rounds": 0}, errors.OutOfRange),
        ({"max_rounds": 101}, errors.OutOfRange),
        ({"rate": 0.0}, errors.InvalidInput),
        ({"canary": Canary(count=0)}, errors.InvalidInput),
        ({"filter": DeadLetterFilter(message_ids=("x",))}, errors.InvalidFilter),
    ],
)
def test_a_policy_out_of_range_is_refused_before_anything_is_written(
    three_dead: Engine, fields: dict[str, object], refused: type[Exception]
) -> None:
    with pytest.raises(refused):
        three_dead.put_auto_redrive(P, "dlq", spec=_spec(**fields))
    with pytest.raises(errors.AutoRedriveNotFound):
        three_dead.get_auto_redrive(P, "dlq")


def test_only_a_dead_letter_queue_takes_a_policy(engine: Engine) -> None:
    engine.create_queue(P, "plain")
    with pytest.raises(errors.InvalidInput):
        engine.put_auto_redrive(P, "plain", spec=_spec())
    with pytest.raises(errors.QueueNotFound):
        engine.put_auto_redrive(P, "nowhere", spec=_spec())


def test_a_replaced_policy_keeps_its_rounds_and_its_next_round_follows_the_last(
    three_dead: Engine, clock: ManualClock
) -> None:
    engine = three_dead
    engine.put_auto_redrive(P, "dlq", spec=_spec())
    Worker(engine, sweep_interval=0).run_once()
    started = clock.now()
    clock.advance(10)
    policy, created = engine.put_auto_redrive(P, "dlq", spec=_spec(interval=120))
    assert not created and policy.rounds == 1
    assert policy.next_due == started + 120
    policy, _ = engine.put_auto_redrive(P, "dlq", spec=_spec(), enabled=False)
    assert policy.state is PolicyState.STOPPED
    policy, _ = engine.put_auto_redrive(P, "dlq", spec=_spec())
    assert policy.state is PolicyState.STOPPED  # enabled not given: the state is kept
    policy, _ = engine.put_auto_redrive(P, "dlq", spec=_spec(), enabled=True)
    assert policy.state is PolicyState.ACTIVE


@pytest.mark.postgres
@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
def test_two_engines_on_one_store_start_a_due_round_once(
    store_url: str, clock: ManualClock
) -> None:
    # Given two server processes' engines on one PostgreSQL database, and a policy due
    stores = [open_store(store_url) for _ in range(2)]
    try:
        engines = [Engine(s, clock) for s in stores]
        with_dlq(engines[0], "a", "dlq", max_claims=1)
        send(engines[0], "a", *[f"m{i}" for i in range(20)])
        _still_failing(engines[0], "a")
        engines[0].put_auto_redrive(P, "dlq", spec=_spec())
        # If both workers look at it at once, several times over
        failures: list[BaseException] = []

        def turn(e: Engine, b: threading.Barrier) -> None:
            try:
                b.wait()
                e.run_auto_redrives()
            except BaseException as exc:
                failures.append(exc)

        for _ in range(3):
            barrier = threading.Barrier(2)
            threads = [threading.Thread(target=turn, args=(e, barrier)) for e in engines]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert not failures, failures
        # I expect one round, one task
        assert engines[1].get_auto_redrive(P, "dlq").rounds == 1
        assert len(engines[1].list_tasks(P, "dlq")) == 1
    finally:
        for s in stores:
            s.close()


def test_a_policy_survives_a_restart(store_url: str, clock: ManualClock) -> None:
    store = open_store(store_url)
    engine = Engine(store, clock)
    with_dlq(engine, "a", "dlq", max_claims=1)
    spec = _spec(canary=Canary(percent=10.0, watch=30), rate=5.0,
                 filter=DeadLetterFilter(error_contains="slow", older_than=60))  # fmt: skip
    engine.put_auto_redrive(P, "dlq", spec=spec)
    store.close()
    store = open_store(store_url)
    try:
        again = Engine(store, clock).get_auto_redrive(P, "dlq")
        assert again.spec == spec and again.state is PolicyState.ACTIVE
        assert again.next_due == clock.now()
    finally:
        store.close()


def test_the_store_reads_the_round_filter_in_the_engine() -> None:
    where = DeadLetterFilter(auto_rounds_below=2)
    assert where.in_engine
    assert DeadLetterFilter.from_dict(where.to_dict()) == where
    assert ListQuery().dead_letters is None


def test_a_round_cancelled_by_hand_lets_the_policy_go_on_and_a_failed_one_pauses_it(
    three_dead: Engine, clock: ManualClock
) -> None:
    engine = three_dead
    engine.put_auto_redrive(P, "dlq", spec=_spec(rate=0.001))
    engine.run_auto_redrives()
    first = engine.get_auto_redrive(P, "dlq").last_round
    assert first is not None and first.task_id is not None
    # A round's task cancelled by hand: the round ends cancelled, the policy goes on.
    engine.cancel_redrive(P, "dlq", task_id=first.task_id)
    engine.redrive_step(first.task_id, 10)  # its next step ends it
    engine.run_auto_redrives()
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.state is PolicyState.ACTIVE and policy.last_round is not None
    assert policy.last_round.outcome is RoundOutcome.CANCELLED
    # A round whose task fails pauses the policy with the task's reason.
    clock.advance(INTERVAL)
    engine.run_auto_redrives()
    second = engine.get_auto_redrive(P, "dlq").last_round
    assert second is not None and second.task_id not in (None, first.task_id)
    engine.fail_redrive(second.task_id or "", "the disk caught fire")
    engine.run_auto_redrives()
    policy = engine.get_auto_redrive(P, "dlq")
    assert policy.state is PolicyState.PAUSED
    assert policy.reason == f"round 2 (task {second.task_id}) failed: the disk caught fire"


def test_deleting_the_dlq_deletes_its_policy(three_dead: Engine) -> None:
    engine = three_dead
    engine.put_auto_redrive(P, "dlq", spec=_spec())
    engine.delete_queue(P, "dlq", force=True)
    engine.create_queue(P, "dlq")
    with pytest.raises(errors.AutoRedriveNotFound):
        engine.get_auto_redrive(P, "dlq")
    assert engine.run_auto_redrives() == 0
