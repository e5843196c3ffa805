"""Redrive tasks: dead letters moved back to their sources (or a destination) at a chosen pace.

A task never fails because of single messages: a dead letter that cannot go back to its own
source (it has none, the source was deleted, or the source is now a DLQ) is skipped, left in
the DLQ untouched and recorded with the task; the task walks the DLQ once, in sequence order.
So is one whose queue is at its bound (`queue_full`): a redrive moves only what fits, and
never pushes a live message out of a drop-head queue to make room.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from deadletter.domain import errors
from deadletter.domain.auto_redrive import REDRIVE_KEY
from deadletter.domain.model import DeadLetterFilter, ListQuery, Queue
from deadletter.domain.redrive import (
    MAX_SKIPPED_RECORDED,
    Canary,
    CanaryDecision,
    MessagePatch,
    RedriveTask,
    SkipReason,
    TaskStatus,
)
from deadletter.engine import bounds, edits, fifo, selection, transitions
from deadletter.engine import canary as canaries
from deadletter.engine.ids import new_id
from deadletter.engine.lookups import require_queue
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction

# A task with a rate may catch up on at most this much idle time in one step.
RATE_BURST_SECONDS = 1.0
# Absorbs float rounding of epoch-sized times (a few tenths of a microsecond).
TIME_SLACK_SECONDS = 1e-5


def start(
    tx: Transaction,
    project: str,
    dlq: str,
    *,
    destination: str | None,
    where: DeadLetterFilter,
    rate: float | None,
    now: float,
    canary: Canary | None = None,
) -> RedriveTask:
    """A new running task over the dead letters `dlq` holds now (those sent later stay).

    `dlq` is a queue some policy names as its DLQ, or one that still holds dead letters (its
    sources deleted or their policies removed since)."""
    task, pattern_id = opened(tx, project, dlq, destination=destination, where=where,
                              rate=rate, now=now)  # fmt: skip
    selected = replace(task.filter, saved=None)  # read in already
    to_move = selection.count(tx, project, dlq, now=now, where=selected, max_seq=task.max_seq)
    return begun(tx, replace(task, to_move=to_move), canary, pattern_id, now)


def opened(
    tx: Transaction,
    project: str,
    dlq: str,
    *,
    destination: str | None,
    where: DeadLetterFilter,
    rate: float | None,
    now: float,
) -> tuple[RedriveTask, str | None]:
    """A task checked and not yet written, its filter resolved and its `to_move` still 0, and
    the pattern it selects by (its canary draws by it): `start` counts it; an automatic
    redrive's round takes the count of its survey, read before its lock, rather than count
    again under it."""
    source = require_queue(tx, project, dlq)
    if not is_redrive_source(tx, project, dlq, now):
        raise errors.InvalidInput(
            f"{dlq!r} is not the dead-letter queue of any queue and holds no dead letters"
        )
    if destination is not None:
        if destination == dlq:
            raise errors.InvalidInput("a redrive cannot move messages into their own queue")
        fifo.check_destination(source, require_queue(tx, project, destination))
        if destination in tx.dead_letter_targets(project):
            raise errors.DeadLetterChainRefused(
                f"{destination!r} is a dead-letter queue; redrive to a source queue"
            )
    if any(t.dlq == dlq for t in active_tasks(tx, project)):
        raise errors.RedriveTaskActive(f"a redrive task is already running on {dlq!r}")
    max_seq = tx.max_seq(project, dlq)
    group = where.saved  # the task says which saved filter it was of
    where = selection.expand(tx, project, dlq, where)  # a saved filter's pattern draws too
    # The task keeps its filter resolved: its ages as times, its pattern as ids, from now.
    resolved = selection.resolve(tx, project, dlq, where=where, now=now)
    task = RedriveTask(
        id=new_id(),
        project=project,
        dlq=dlq,
        destination=destination,
        filter=replace(resolved, saved=group),
        rate=rate,
        status=TaskStatus.RUNNING,
        moved=0,
        to_move=0,
        max_seq=max_seq,
        started_at=now,
        updated_at=now,
    )
    return task, where.pattern_id


def begun(
    tx: Transaction, task: RedriveTask, canary: Canary | None, pattern_id: str | None, now: float
) -> RedriveTask:
    """`task` written, with its canary's sample drawn (by the pattern it selected by, if any:
    its verdict names it)."""
    if canary is not None:
        if canary.pattern_id is None:
            canary = replace(canary, pattern_id=pattern_id)
        task = replace(task, canary=canaries.started(tx, canary, task, now))
    tx.insert_task(task)
    return task


def is_redrive_source(tx: Transaction, project: str, name: str, now: float) -> bool:
    """Whether a redrive may start on `name`: a policy points at it, or it holds dead letters."""
    return bool(tx.sources_of(project, name) or tx.count_by_source(project, name, now))


def active_tasks(tx: Transaction, project: str) -> list[RedriveTask]:
    tasks = (tx.get_task(task_id) for task_id in tx.active_task_ids())
    return [t for t in tasks if t is not None and t.project == project]


def step(tx: Transaction, pending: Pending, task_id: str, budget: int, now: float) -> RedriveTask:
    """Move up to `budget` messages of a running task, with its progress, under its row lock:
    while its canary samples or watches, the canary's part; then the rest of the selection."""
    task = tx.get_task(task_id, lock=True)
    if task is None:
        raise errors.TaskNotFound(f"redrive task {task_id!r} does not exist")
    if task.status is TaskStatus.CANCELLING:
        task = replace(task, status=TaskStatus.CANCELLED, updated_at=now)
        tx.update_task(task)
        return task
    if task.status is not TaskStatus.RUNNING or budget <= 0:
        return task
    if canaries.state(task.canary) is canaries.State.WATCHING:
        task = _watch(tx, task, now)
    phase = canaries.state(task.canary)
    if phase is canaries.State.SAMPLING:
        return _sample(tx, pending, task, budget=budget, now=now)
    if phase is canaries.State.WATCHING or task.status is not TaskStatus.RUNNING:
        return task
    pace = paced(task, now, budget)
    if pace[0] == 0:
        return task
    drawn = canaries.drawn(task.canary)
    moved = _move(tx, pending, task, where=task.filter, after_seq=task.cursor_seq, pace=pace,
                  now=now, drawn=drawn)  # fmt: skip
    if isinstance(moved, RedriveTask):
        return moved
    task, _, last_seq, _ = moved
    if last_seq is None:
        task = replace(task, status=TaskStatus.COMPLETED, updated_at=now)
    else:
        task = replace(task, cursor_seq=last_seq)
    tx.update_task(task)
    return task


def _sample(
    tx: Transaction, pending: Pending, task: RedriveTask, *, budget: int, now: float
) -> RedriveTask:
    """One step of the canary's sample: the drawn dead letters, in the DLQ's order."""
    c = task.canary
    assert c is not None
    pace = paced(task, now, min(budget, c.size - c.sample))
    if pace[0] == 0:
        return task
    where = canaries.sample_filter(c, task.filter)
    moved = _move(tx, pending, task, where=where, after_seq=c.plan_seq, pace=pace, now=now)
    if isinstance(moved, RedriveTask):
        return moved
    task, ids, last_seq, short = moved
    task = replace(task, canary=canaries.sampled(c, ids, None if short else last_seq, now))
    tx.update_task(task)
    return task


# What `_move` did: the task with its counts (not yet written), the ids it moved, the last
# sequence number it read (None: the selection holds no more), and whether it read fewer
# than it was allowed (no more after them).
Moved = tuple[RedriveTask, list[str], int | None, bool]


def _move(
    tx: Transaction,
    pending: Pending,
    task: RedriveTask,
    *,
    where: DeadLetterFilter,
    after_seq: int,
    pace: tuple[int, Callable[[int], float]],
    now: float,
    drawn: frozenset[str] = frozenset(),
) -> Moved | RedriveTask:
    """Move up to `allowed` of the next dead letters of `where` after `after_seq`, leaving
    out the `drawn` sample (its own steps examined it); or the task failed, written, when it
    cannot go on. `pace` is `paced`'s answer: how many may move, and the new `updated_at`."""
    allowed, paced_to = pace
    batch, last_seq, short = selection.redrive_batch(
        tx,
        task.project,
        task.dlq,
        now=now,
        where=where,
        max_seq=task.max_seq,
        limit=allowed,
        after_seq=after_seq,
    )
    if not batch:
        # Nothing left; or only dead letters the filter does not select were read: the next
        # step goes on after them.
        return (task, [], None, True) if short else (task, [], last_seq, False)
    if drawn:
        batch = [b for b in batch if b[0] not in drawn]
    outcome = _outcomes(tx, task, batch)
    if isinstance(outcome, str):
        task = replace(task, status=TaskStatus.FAILED, failure_reason=outcome, updated_at=now)
        tx.update_task(task)
        return task
    fresh, skipped = outcome
    fresh, full = _within_bounds(tx, task.project, task.dlq, fresh, now)
    skipped += full
    if task.transform is not None:
        fresh, refused = _transformed(tx, task, task.transform, fresh, now)
        skipped += refused
    for (_, tag), (destination, ids) in fresh.items():
        event = transitions.redrive_event(destination.name, task.dlq, task.id, now, tag)
        if task.filter.auto_rounds_below is not None:  # a round of automatic redrive
            event[REDRIVE_KEY] = True
        expires = now + destination.settings.default_ttl
        tx.redrive_messages(
            task.project,
            ids,
            destination=destination.name,
            expires_at=expires,
            event=event,
            now=now,
            only_tag=tag,
        )
        pending.available.add((task.project, destination.name))
    moved_ids = [mid for _, ids in fresh.values() for mid in ids]
    count = len(moved_ids)
    if count:
        project, dlq, task_id = task.project, task.dlq, task.id
        pending.calls.append(lambda lst: lst.redriven(project, dlq, task_id, count))
    room = MAX_SKIPPED_RECORDED - len(task.skipped_messages)
    task = replace(
        task,
        moved=task.moved + count,
        skipped=task.skipped + len(skipped),
        skipped_messages=task.skipped_messages + tuple(skipped[: max(room, 0)]),
        updated_at=paced_to(count),
    )
    return task, moved_ids, last_seq, short


def _transformed(
    tx: Transaction, task: RedriveTask, patch: MessagePatch, fresh: Destinations, now: float
) -> tuple[Destinations, list[tuple[str, SkipReason]]]:
    """The task's transform applied to the dead letters about to move, each edit kept in
    its history; one it does not apply to stays in the DLQ, skipped (`transform_refused`)."""
    kept: Destinations = {}
    refused: list[tuple[str, SkipReason]] = []
    for key, (queue, ids) in fresh.items():
        changed = []
        for m in tx.get_messages(task.project, task.dlq, ids):
            try:
                by = patch.by or {}
                limit = queue.settings.max_message_size
                changed.append(
                    edits.edited(m, patch, by=by, now=now, max_size=limit, task_id=task.id)
                )
            except (errors.InvalidInput, errors.PatchConflict):
                refused.append((m.id, SkipReason.TRANSFORM_REFUSED))
        tx.edit_messages(task.project, changed)
        if changed:
            kept[key] = (queue, [m.id for m in changed])
    return kept, refused


# How many of the DLQ's new arrivals one watching step reads for the sample's re-deaths.
WATCH_BATCH = 500


def _watch(tx: Transaction, task: RedriveTask, now: float) -> RedriveTask:
    """Count the sample's messages that came back dead into the DLQ since the last look (a
    message redriven by this task carries the task's id in its history), and let the canary
    decide: pause as soon as too many died again, go on with the rest once the watch is over."""
    c = task.canary
    assert c is not None
    redeaths, seen = c.redeaths, c.seen_seq
    while True:
        query = ListQuery(after_seq=seen, limit=WATCH_BATCH, include_claimed=True,
                          include_delayed=True)  # fmt: skip
        arrived = tx.list_messages(task.project, task.dlq, now, query)
        redeaths += sum(1 for m in arrived if _redriven_by(m.history, task.id))
        if arrived:
            seen = arrived[-1].seq
        if len(arrived) < WATCH_BATCH:
            break
    judged = canaries.watched(c, redeaths, seen, now)
    if judged == c:
        return task
    if judged.decision is CanaryDecision.PAUSED:
        task = replace(task, status=TaskStatus.PAUSED, updated_at=now)
    elif judged.decision is CanaryDecision.CONTINUED:
        # The rest is paced from now, not from before the watch.
        task = replace(task, updated_at=max(task.updated_at, now))
    task = replace(task, canary=judged)
    tx.update_task(task)
    return task


def _redriven_by(history: tuple[dict[str, Any], ...], task_id: str) -> bool:
    return any(e.get("event") == "redriven" and e.get("task_id") == task_id for e in history)


def watching(task: RedriveTask) -> bool:
    """Whether a task waits for its canary's verdict: its sample moved, the rest waits."""
    return canaries.state(task.canary) is canaries.State.WATCHING


# (queue name, consumer tag or None) -> (the queue, the ids that go back to it)
Destinations = dict[tuple[str, str | None], tuple[Queue, list[str]]]


def _outcomes(
    tx: Transaction, task: RedriveTask, batch: list[tuple[str, int, str | None, str | None]]
) -> tuple[Destinations, list[tuple[str, SkipReason]]] | str:
    """The ids of `batch` by the queue each goes back to (and the consumer tag it goes back
    to alone, if any), and those skipped with the reason; or why the whole task cannot go on
    (its named destination was deleted). Whether a dead letter may go back depends only on
    its source queue, so each source is looked at once."""
    fresh: Destinations = {}
    if task.destination is not None:
        target = tx.get_queue(task.project, task.destination)
        if target is None:
            return f"queue {task.destination!r} no longer exists"
        for mid, _, _, tag in batch:
            key = (target.name, transitions.redrive_tag(tag, target))
            fresh.setdefault(key, (target, []))[1].append(mid)
        return fresh, []
    targets = tx.dead_letter_targets(task.project)
    sources: dict[str, Queue | SkipReason] = {}
    skipped: list[tuple[str, SkipReason]] = []
    for mid, _, name, tag in batch:
        if name is None:
            skipped.append((mid, SkipReason.NO_SOURCE))
            continue
        if name not in sources:
            source = tx.get_queue(task.project, name)
            reason = transitions.redrive_skip_of(name, source, targets)
            sources[name] = (
                source
                if reason is None and source is not None
                else (reason or SkipReason.SOURCE_DELETED)
            )
        where = sources[name]
        if isinstance(where, SkipReason):
            skipped.append((mid, where))
        else:
            key = (where.name, transitions.redrive_tag(tag, where))
            fresh.setdefault(key, (where, []))[1].append(mid)
    return fresh, skipped


def _within_bounds(
    tx: Transaction, project: str, dlq: str, fresh: Destinations, now: float
) -> tuple[Destinations, list[tuple[str, SkipReason]]]:
    """Of `fresh`, what each bounded queue has room for now, and the rest skipped as
    `queue_full`: they stay in the DLQ. A redrive never pushes a live message out, so it
    treats drop-head as reject-publish. The queue's row is locked, as a send to it locks it,
    so sends, dead letters and redrives to one bounded queue take turns and its bound holds
    exactly."""
    within: Destinations = {}
    skipped: list[tuple[str, SkipReason]] = []
    # Those going back to one consumer tag count in the same queue: one count per queue.
    by_queue: dict[str, list[tuple[str | None, str]]] = {}
    for (name, tag), (_, ids) in fresh.items():
        by_queue.setdefault(name, []).extend((tag, mid) for mid in ids)
    for name, pairs in by_queue.items():
        queue = fresh[next(k for k in fresh if k[0] == name)][0]
        if queue.settings.bounded:
            queue = require_queue(tx, project, name, lock=True)
        if not queue.settings.bounded:
            for tag, mid in pairs:
                within.setdefault((name, tag), (queue, []))[1].append(mid)
            continue
        found = {m.id: m for m in tx.get_messages(project, dlq, [mid for _, mid in pairs])}
        present = [(tag, found[mid]) for tag, mid in pairs if mid in found]
        fits = bounds.room(tx, queue, [m for _, m in present], now)
        for i, (tag, m) in enumerate(present):
            if i < fits:
                within.setdefault((name, tag), (queue, []))[1].append(m.id)
            else:
                skipped.append((m.id, SkipReason.QUEUE_FULL))
    return within, skipped


def fail(tx: Transaction, task_id: str, reason: str, now: float) -> RedriveTask | None:
    """Stop a task whose steps fail, keeping why; a task already finished is left as it is."""
    task = tx.get_task(task_id, lock=True)
    if task is None or task.status not in (TaskStatus.RUNNING, TaskStatus.CANCELLING):
        return task
    task = replace(task, status=TaskStatus.FAILED, failure_reason=reason[:1000], updated_at=now)
    tx.update_task(task)
    return task


def cancel(tx: Transaction, project: str, dlq: str, task_id: str, now: float) -> RedriveTask:
    """Ask a running task to stop; its next step marks it cancelled. A paused one is
    cancelled at once."""
    task = owned(tx.get_task(task_id, lock=True), project, dlq, task_id)
    if task.status is TaskStatus.PAUSED:  # no step will come for it: it ends here
        task = replace(task, status=TaskStatus.CANCELLED, updated_at=now)
        tx.update_task(task)
        return task
    if task.status is not TaskStatus.RUNNING:
        raise errors.TaskNotRunning(f"redrive task {task_id!r} is {task.status.value}, not RUNNING")
    task = replace(task, status=TaskStatus.CANCELLING, updated_at=now)
    tx.update_task(task)
    return task


def resume(tx: Transaction, project: str, dlq: str, task_id: str, now: float) -> RedriveTask:
    """Let a task its canary paused move the rest after all (the cause was fixed, or the
    re-deaths are accepted). The canary keeps its verdict and records the resume."""
    task = owned(tx.get_task(task_id, lock=True), project, dlq, task_id)
    if task.status is not TaskStatus.PAUSED or task.canary is None:
        raise errors.TaskNotPaused(f"redrive task {task_id!r} is {task.status.value}, not PAUSED")
    if any(t.dlq == dlq and t.id != task_id for t in active_tasks(tx, project)):
        raise errors.RedriveTaskActive(f"a redrive task is already running on {dlq!r}")
    canary = replace(task.canary, resumed_at=now)
    # The rest is paced from now, not from before the pause.
    task = replace(task, status=TaskStatus.RUNNING, canary=canary, updated_at=now)
    tx.update_task(task)
    return task


def owned(task: RedriveTask | None, project: str, dlq: str, task_id: str) -> RedriveTask:
    """`task` if it belongs to `dlq` of `project`; a task of another is not found."""
    if task is None or task.project != project or task.dlq != dlq:
        raise errors.TaskNotFound(f"redrive task {task_id!r} does not exist")
    return task


def paced(task: RedriveTask, now: float, budget: int) -> tuple[int, Callable[[int], float]]:
    """How many messages a step may move now, and the task's new `updated_at` once it moved n.

    For a task with a rate, `updated_at` is the time up to which its allowance is spent: a step
    may move what accrued since (at most a second's worth, or one message), and advances it by
    n / rate, so the fraction of a message not yet moved is kept for the next step. Every
    server process steps the same row under its lock, so together they keep to the rate.
    """
    if task.rate is None:
        return budget, lambda n: now
    rate = task.rate
    # Under one message a second the burst is one message: the fraction accrues step by step.
    since = max(task.updated_at, now - max(RATE_BURST_SECONDS, 1 / rate))
    allowed = min(budget, int((now - since + TIME_SLACK_SECONDS) * rate))
    return allowed, lambda n: since + n / rate
