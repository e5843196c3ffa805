"""Automatic redrive: a DLQ's policy, and its rounds, each an ordinary redrive task.

A round, when due, is claimed under the policy's row lock (`FOR UPDATE` on PostgreSQL, the
write lock on SQLite), so of the server processes whose workers find it due one starts it;
the others then find it no longer due. Before the lock, a read surveys the selection: how
many dead letters the policy may still send back and which have been sent back `max_rounds`
times (`survey`). Under the lock the round marks those exhausted (a history event, once per
count of rounds) and starts a task whose filter leaves them out (`auto_rounds_below`), with
the policy's canary and rate. Its redrive events carry `auto_redrive`, which is how a dead
letter counts its rounds. A round never overlaps another task on the DLQ: one that comes due
while a task runs there is skipped, and the next is an interval later.

When the round's task ends, the worker records its outcome; a canary that paused it, or a
failure, pauses the policy with the reason, rather than sending the same dead letters back
round after round. A stop or a delete cancels the round in flight.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from deadletter.domain import errors
from deadletter.domain.auto_redrive import (
    EXHAUSTED_EVENT,
    MAX_INTERVAL,
    MAX_ROUNDS,
    MIN_INTERVAL,
    AutoRedrive,
    AutoRedriveSpec,
    LastRound,
    PolicyState,
    RoundOutcome,
    auto_rounds,
    marked_since_redriven,
)
from deadletter.domain.model import ListQuery
from deadletter.domain.redrive import Canary, RedriveTask, TaskStatus
from deadletter.engine import canary as canaries
from deadletter.engine import redrive, selection, validation
from deadletter.engine.lookups import require_queue
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction

# The ids of exhausted dead letters one round marks at most (the rest, at the next round).
MAX_MARKED = 10_000


def check(spec: AutoRedriveSpec) -> None:
    """A policy's request is whole and in range before anything is written."""
    validation.check_redrive(spec.filter, spec.rate)
    if spec.filter.message_ids is not None or spec.filter.auto_rounds_below is not None:
        raise errors.InvalidFilter("an automatic redrive selects by the filter language only")
    if spec.canary is not None:
        canaries.check(spec.canary)
    for what, value, low, high in (
        ("interval", spec.interval, MIN_INTERVAL, MAX_INTERVAL),
        ("max_rounds", spec.max_rounds, 1, MAX_ROUNDS),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise errors.OutOfRange(what=what, value=value, low=low, high=high)


def put(
    tx: Transaction,
    project: str,
    dlq: str,
    *,
    spec: AutoRedriveSpec,
    enabled: bool | None,
    now: float,
) -> tuple[AutoRedrive, bool]:
    """The DLQ's policy made or replaced, and whether it is new. A new one's first round is
    due at once; a replaced one keeps its counters and last round, its next round an
    interval after the last. `enabled` True makes it active, False stops it, None keeps its
    state (a new one is active)."""
    require_queue(tx, project, dlq)
    if not redrive.is_redrive_source(tx, project, dlq, now):
        raise errors.InvalidInput(
            f"{dlq!r} is not the dead-letter queue of any queue and holds no dead letters"
        )
    selection.resolve(tx, project, dlq, where=spec.filter, now=now)  # a pattern it stores
    current = tx.get_auto_redrive(project, dlq, lock=True)
    if current is None:
        policy = AutoRedrive(
            project=project,
            dlq=dlq,
            spec=spec,
            state=PolicyState.STOPPED if enabled is False else PolicyState.ACTIVE,
            next_due=now,
            created_at=now,
            updated_at=now,
            reason="stopped when it was set" if enabled is False else None,
        )
    else:
        last = current.last_round.at if current.last_round is not None else None
        policy = replace(
            current,
            spec=spec,
            next_due=now if last is None else max(now, last + spec.interval),
            updated_at=now,
        )
        if enabled is True and policy.state is not PolicyState.ACTIVE:
            policy = replace(policy, state=PolicyState.ACTIVE, reason=None)
        elif enabled is False and policy.state is not PolicyState.STOPPED:
            policy = _stopped(tx, policy, "stopped when it was set", now)
    tx.put_auto_redrive(policy)
    return policy, current is None


def get(tx: Transaction, project: str, dlq: str, *, lock: bool = False) -> AutoRedrive:
    require_queue(tx, project, dlq)
    policy = tx.get_auto_redrive(project, dlq, lock=lock)
    if policy is None:
        raise errors.AutoRedriveNotFound(f"{dlq!r} has no automatic redrive")
    return policy


def shown(tx: Transaction, policy: AutoRedrive) -> AutoRedrive:
    """`policy` as read, with what its round in flight moved so far (not stored: the round
    adds it to the counters when it ends)."""
    if not policy.round_open or policy.last_round is None or policy.last_round.task_id is None:
        return policy
    task = tx.get_task(policy.last_round.task_id)
    if task is None:
        return policy
    last = replace(policy.last_round, moved=task.moved)
    return replace(policy, last_round=last, moved=policy.moved + task.moved)


def stop(tx: Transaction, project: str, dlq: str, now: float) -> AutoRedrive:
    """No more rounds, and the round in flight cancelled; stopping a stopped policy is no
    change."""
    policy = get(tx, project, dlq, lock=True)
    if policy.state is PolicyState.STOPPED:
        return policy
    policy = _stopped(tx, policy, "stopped by request", now)
    tx.put_auto_redrive(policy)
    return policy


def resume(tx: Transaction, project: str, dlq: str, now: float) -> AutoRedrive:
    """A paused or stopped policy active again, its next round due at once."""
    policy = get(tx, project, dlq, lock=True)
    if policy.state is PolicyState.ACTIVE:
        raise errors.AutoRedriveActive(f"the automatic redrive of {dlq!r} is active")
    policy = replace(policy, state=PolicyState.ACTIVE, reason=None, next_due=now, updated_at=now)
    tx.put_auto_redrive(policy)
    return policy


def delete(tx: Transaction, project: str, dlq: str, now: float) -> bool:
    """The policy gone, its round in flight cancelled; False when there was none."""
    require_queue(tx, project, dlq)
    policy = tx.get_auto_redrive(project, dlq, lock=True)
    if policy is None:
        return False
    _stopped(tx, policy, "deleted", now)
    return tx.delete_auto_redrive(project, dlq)


def _stopped(tx: Transaction, policy: AutoRedrive, reason: str, now: float) -> AutoRedrive:
    """`policy` stopped with `reason`: the task of its round in flight, if still running or
    paused, is cancelled (its next step ends it), and the round closed as cancelled."""
    if policy.round_open and policy.last_round is not None:
        task_id = policy.last_round.task_id
        task = tx.get_task(task_id) if task_id is not None else None
        if task is not None and task.status in (TaskStatus.RUNNING, TaskStatus.PAUSED):
            task = redrive.cancel(tx, policy.project, policy.dlq, task.id, now)
        policy = _closed(policy, task, RoundOutcome.CANCELLED)
    return replace(policy, state=PolicyState.STOPPED, reason=reason, updated_at=now)


# A round


@dataclass(frozen=True)
class Survey:
    """What a round will find, read before its lock: the dead letters of the selection it may
    still send back, those it keeps (sent back `max_rounds` times), and the ids of those of
    them not yet marked exhausted."""

    eligible: int
    kept: int
    to_mark: tuple[str, ...]


def survey(tx: Transaction, policy: AutoRedrive, now: float) -> Survey:
    """Read the policy's selection once (a read transaction: no lock is held meanwhile)."""
    where = selection.resolve(tx, policy.project, policy.dlq, where=policy.spec.filter, now=now)
    stored, cap = where.for_store(), policy.spec.max_rounds
    eligible, kept, after = 0, 0, 0
    to_mark: list[str] = []
    while True:
        query = ListQuery(after_seq=after, limit=selection.SCAN, include_claimed=True,
                          include_delayed=True, dead_letters=stored)  # fmt: skip
        page = tx.list_messages(policy.project, policy.dlq, now, query)
        for m in page:
            if not selection.matches(m, where):
                continue
            if auto_rounds(m.history) < cap:
                eligible += 1
                continue
            kept += 1
            if not marked_since_redriven(m.history) and len(to_mark) < MAX_MARKED:
                to_mark.append(m.id)
        if len(page) < selection.SCAN:
            return Survey(eligible, kept, tuple(to_mark))
        after = page[-1].seq


def due(policy: AutoRedrive, now: float) -> bool:
    return policy.state is PolicyState.ACTIVE and policy.next_due <= now


def proceed(
    tx: Transaction,
    pending: Pending,
    project: str,
    dlq: str,
    *,
    found: Survey | None,
    now: float,
) -> AutoRedrive | None:
    """Under the policy's lock: record the end of its round in flight, then, if a round is
    due and `found` surveyed it, start it. None when the policy is gone."""
    policy = tx.get_auto_redrive(project, dlq, lock=True)
    if policy is None or policy.state is not PolicyState.ACTIVE:
        return policy
    before = policy
    if policy.round_open:
        policy = _settled(tx, policy, now)
    if due(policy, now):
        if policy.round_open:
            # Its task still runs: this round is skipped, the next is an interval later.
            policy = replace(policy, next_due=now + policy.spec.interval, updated_at=now)
        elif found is not None:
            policy = _round(tx, pending, policy, found, now)
    if policy != before:
        tx.put_auto_redrive(policy)
    return policy


def _settled(tx: Transaction, policy: AutoRedrive, now: float) -> AutoRedrive:
    """The round in flight closed if its task has ended; a canary's pause or a failure
    pauses the policy with the reason."""
    assert policy.last_round is not None
    task_id = policy.last_round.task_id
    task = tx.get_task(task_id) if task_id is not None else None
    if task is not None and task.status in (TaskStatus.RUNNING, TaskStatus.CANCELLING):
        return policy
    if task is None:
        return replace(_closed(policy, None, RoundOutcome.FAILED), updated_at=now)
    outcome = RoundOutcome(task.status.value.lower())
    policy = replace(_closed(policy, task, outcome), updated_at=now)
    number = f"round {policy.rounds} (task {task.id})"
    if outcome is RoundOutcome.PAUSED:
        why = task.canary.reason if task.canary is not None else None
        reason = f"{number} was paused by its canary: {why or 'too many died again'}"
    elif outcome is RoundOutcome.FAILED:
        reason = f"{number} failed: {task.failure_reason or 'no reason given'}"
    else:
        return policy
    return replace(policy, state=PolicyState.PAUSED, reason=reason)


def _closed(policy: AutoRedrive, task: RedriveTask | None, outcome: RoundOutcome) -> AutoRedrive:
    assert policy.last_round is not None
    moved = task.moved if task is not None else 0
    last = replace(policy.last_round, outcome=outcome, moved=moved)
    return replace(policy, last_round=last, moved=policy.moved + moved)


def _round(
    tx: Transaction, pending: Pending, policy: AutoRedrive, found: Survey, now: float
) -> AutoRedrive:
    """Mark the exhausted, then start the round's task, unless another task runs on the DLQ
    or nothing is left to send back (then no task is started)."""
    spec = policy.spec
    marked = _mark_exhausted(tx, policy, found.to_mark, now)
    policy = replace(
        policy,
        exhausted=policy.exhausted + marked,
        next_due=now + spec.interval,
        updated_at=now,
    )
    last = LastRound(at=now, task_id=None, outcome=RoundOutcome.SKIPPED,
                     eligible=found.eligible, kept=found.kept)  # fmt: skip
    running = [t for t in redrive.active_tasks(tx, policy.project) if t.dlq == policy.dlq]
    if running:
        reason = f"task {running[0].id} was running on the DLQ"
        return replace(policy, last_round=replace(last, reason=reason))
    if not found.eligible:
        return replace(policy, last_round=replace(last, outcome=RoundOutcome.NOTHING_TO_REDRIVE))
    where = replace(spec.filter, auto_rounds_below=spec.max_rounds)
    canary = _fresh(spec.canary)
    task, pattern_id = redrive.opened(tx, policy.project, policy.dlq, destination=None,
                                      where=where, rate=spec.rate, now=now)  # fmt: skip
    # Its count is the survey's, read before the lock: not counted again under it.
    task = redrive.begun(tx, replace(task, to_move=found.eligible), canary, pattern_id, now)
    project, dlq, task_id = policy.project, policy.dlq, task.id
    pending.calls.append(lambda lst: lst.redrive_due(project, dlq, task_id))
    last = replace(last, task_id=task.id, outcome=RoundOutcome.RUNNING)
    return replace(policy, rounds=policy.rounds + 1, last_round=last)


def _fresh(canary: Canary | None) -> Canary | None:
    """The canary a round starts with: the policy's request, none of a last round's draw."""
    if canary is None:
        return None
    return Canary(count=canary.count, percent=canary.percent, watch=canary.watch,
                  max_redeath=canary.max_redeath, force=canary.force)  # fmt: skip


def _mark_exhausted(tx: Transaction, policy: AutoRedrive, ids: tuple[str, ...], now: float) -> int:
    """An `auto_redrive_exhausted` event on each of `ids` still exhausted and unmarked, read
    again under their locks; how many were marked."""
    if not ids:
        return 0
    cap = policy.spec.max_rounds
    changed = []
    for m in tx.get_messages(policy.project, policy.dlq, list(ids), lock=True):
        rounds = auto_rounds(m.history)
        if m.provenance is None or rounds < cap or marked_since_redriven(m.history):
            continue
        event: dict[str, Any] = {"event": EXHAUSTED_EVENT, "at": now, "rounds": rounds,
                                 "max_rounds": cap}  # fmt: skip
        changed.append(replace(m, history=(*m.history, event)))
    if changed:
        tx.edit_messages(policy.project, changed)
    return len(changed)


def paused_by_error(
    tx: Transaction, project: str, dlq: str, reason: str, now: float
) -> AutoRedrive | None:
    """A policy whose round could not start (its pattern is gone, a canary over an impure
    pattern...) paused with why, rather than tried again every tick."""
    policy = tx.get_auto_redrive(project, dlq, lock=True)
    if policy is None or policy.state is not PolicyState.ACTIVE:
        return policy
    policy = replace(policy, state=PolicyState.PAUSED, reason=reason[:1000], updated_at=now)
    tx.put_auto_redrive(policy)
    return policy
