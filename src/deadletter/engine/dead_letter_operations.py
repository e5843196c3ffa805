"""The dead-letter side of the engine's façade: redrive tasks, browsing a DLQ, the failure
patterns the analysis stores, and the credential records. `Engine` inherits these, so the
faces still call one object; the rules live in `redrive`, `patterns` and `credentials`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from deadletter.clock import Clock
from deadletter.domain import errors
from deadletter.domain.auto_redrive import AutoRedrive, AutoRedriveSpec, PolicyState
from deadletter.domain.model import (
    MAX_PATTERNS,
    MAX_PATTERNS_BYTES,
    DeadLetterFilter,
    Message,
    Queue,
)
from deadletter.domain.patterns import Assignment, MergedBatch
from deadletter.domain.redrive import Canary, MessagePatch, RedriveTask, TaskStatus
from deadletter.engine import (
    auto_redrive,
    edits,
    patterns,
    redrive,
    selection,
    splits,
    validation,
)
from deadletter.engine import canary as canaries
from deadletter.engine.lookups import require_queue
from deadletter.engine.subscriptions import Subscriptions
from deadletter.engine.transactions import Pending, Runner
from deadletter.storage.base import CredentialRecord, Transaction

log = logging.getLogger(__name__)

# Dead letters one transaction of a purge deletes.
PURGE_BATCH = 1000


class DeadLetterOperations:
    clock: Clock
    _runner: Runner
    subscriptions: Subscriptions

    # Redrive

    def start_redrive(
        self,
        project: str,
        dlq: str,
        *,
        destination: str | None = None,
        where: DeadLetterFilter | None = None,
        rate: float | None = None,
        canary: Canary | None = None,
        transform: MessagePatch | None = None,
    ) -> RedriveTask:
        """Start moving dead letters back: to each one's source queue, or to `destination`;
        with a `canary`, a sample first, and the rest only if the sample stays alive; with a
        `transform`, each edited as it moves (kept in its history)."""
        filter_ = where or DeadLetterFilter()
        validation.check_redrive(filter_, rate)
        if canary is not None:
            canaries.check(canary)
        if transform is not None:
            edits.check(transform)

        def work(tx: Transaction, pending: Pending) -> RedriveTask:
            now = self.clock.now()
            task = redrive.start(
                tx,
                project,
                dlq,
                destination=destination,
                where=filter_,
                rate=rate,
                now=now,
                canary=canary,
            )
            if transform is not None:
                task = replace(task, transform=transform)
                tx.update_task(task)
            pending.calls.append(lambda lst: lst.redrive_due(project, dlq, task.id))
            return task

        return self._runner.run(work)

    def redrive_step(self, task_id: str, budget: int) -> RedriveTask:
        """Move up to `budget` messages of a running task, atomically with its progress.

        A task with a rate moves no more than its rate allows since its last step, whichever
        process steps it: the pace is kept in the task's row (see `redrive.paced`).
        """
        return self._runner.run(
            lambda tx, pending: redrive.step(tx, pending, task_id, budget, self.clock.now())
        )

    def fail_redrive(self, task_id: str, reason: str) -> RedriveTask | None:
        """Mark a task whose step cannot run as FAILED, so that it stops taking turns."""
        return self._runner.run(lambda tx, _: redrive.fail(tx, task_id, reason, self.clock.now()))

    def cancel_redrive(self, project: str, dlq: str, *, task_id: str) -> RedriveTask:
        def work(tx: Transaction, pending: Pending) -> RedriveTask:
            task = redrive.cancel(tx, project, dlq, task_id, self.clock.now())
            if task.status is TaskStatus.CANCELLING:  # its next step ends it
                pending.calls.append(lambda lst: lst.redrive_due(project, dlq, task_id))
            return task

        return self._runner.run(work)

    def resume_redrive(self, project: str, dlq: str, *, task_id: str) -> RedriveTask:
        def work(tx: Transaction, pending: Pending) -> RedriveTask:
            task = redrive.resume(tx, project, dlq, task_id, self.clock.now())
            pending.calls.append(lambda lst: lst.redrive_due(project, dlq, task_id))
            return task

        return self._runner.run(work)

    def get_task(self, project: str, dlq: str, *, task_id: str) -> RedriveTask:
        """A redrive task of `dlq`; a task of another queue or project is not found."""
        return redrive.owned(
            self._runner.read(lambda tx: tx.get_task(task_id)), project, dlq, task_id
        )

    def list_tasks(
        self, project: str, dlq: str | None = None, *, limit: int = 100
    ) -> list[RedriveTask]:
        return self._runner.read(lambda tx: tx.list_tasks(project, dlq, limit))

    def active_task_ids(self) -> list[str]:
        return self._runner.read(lambda tx: tx.active_task_ids())

    # Automatic redrive (engine/auto_redrive.py)

    def put_auto_redrive(
        self, project: str, dlq: str, *, spec: AutoRedriveSpec, enabled: bool | None = None
    ) -> tuple[AutoRedrive, bool]:
        """Set the DLQ's automatic redrive policy (made, or replaced); whether it is new."""
        auto_redrive.check(spec)
        return self._runner.run(
            lambda tx, _: auto_redrive.put(
                tx, project, dlq, spec=spec, enabled=enabled, now=self.clock.now()
            )
        )

    def get_auto_redrive(self, project: str, dlq: str) -> AutoRedrive:
        """The policy, with what the round in flight moved so far."""
        return self._runner.read(
            lambda tx: auto_redrive.shown(tx, auto_redrive.get(tx, project, dlq))
        )

    def stop_auto_redrive(self, project: str, dlq: str) -> AutoRedrive:
        return self._runner.run(lambda tx, _: auto_redrive.stop(tx, project, dlq, self.clock.now()))

    def resume_auto_redrive(self, project: str, dlq: str) -> AutoRedrive:
        return self._runner.run(
            lambda tx, _: auto_redrive.resume(tx, project, dlq, self.clock.now())
        )

    def delete_auto_redrive(self, project: str, dlq: str) -> bool:
        return self._runner.run(
            lambda tx, _: auto_redrive.delete(tx, project, dlq, self.clock.now())
        )

    def run_auto_redrives(self) -> int:
        """The background worker's turn: each active policy with a round due, or whose round
        has ended, moved on (`auto_redrive.proceed`); how many were looked at. A round that
        cannot start pauses its policy with the reason."""
        due = self._runner.read(lambda tx: tx.due_auto_redrives(self.clock.now()))
        for project, dlq in due:
            try:
                self._advance_auto_redrive(project, dlq)
            except errors.StoreUnavailable:
                raise  # the store's outage, not the policy's: it goes on once the store is back
            except Exception as exc:  # one policy's failure must not stall the others'
                if not isinstance(exc, errors.DeadletterError):
                    log.exception("automatic redrive round failed", extra={"dlq": dlq})
                self._pause_auto_redrive(project, dlq, f"a round could not start: {exc}")
        return len(due)

    def _pause_auto_redrive(self, project: str, dlq: str, reason: str) -> None:
        self._runner.run(
            lambda tx, _: auto_redrive.paused_by_error(tx, project, dlq, reason, self.clock.now())
        )
        log.warning("automatic redrive paused", extra={"dlq": dlq, "reason": reason})

    def _advance_auto_redrive(self, project: str, dlq: str) -> None:
        def look(tx: Transaction) -> auto_redrive.Survey | None:
            policy = tx.get_auto_redrive(project, dlq)
            now = self.clock.now()
            if policy is None or not auto_redrive.due(policy, now) or policy.round_open:
                return None
            return auto_redrive.survey(tx, policy, now)

        found = self._runner.read(look)
        policy = self._runner.run(
            lambda tx, pending: auto_redrive.proceed(
                tx, pending, project, dlq, found=found, now=self.clock.now()
            )
        )
        if policy is not None and policy.state is PolicyState.PAUSED:
            log.warning("automatic redrive paused", extra={"dlq": dlq, "reason": policy.reason})

    def list_dead_letters(
        self,
        project: str,
        dlq: str,
        *,
        where: DeadLetterFilter | None = None,
        after_seq: int = 0,
        limit: int = 100,
    ) -> list[Message]:
        """Browse a DLQ without consuming it, claimed messages included: those `where`
        selects (`engine.selection`)."""

        def work(tx: Transaction) -> list[Message]:
            require_queue(tx, project, dlq)
            now = self.clock.now()
            resolved = selection.resolve(
                tx, project, dlq, where=where or DeadLetterFilter(), now=now
            )
            return selection.listed(
                tx, project, dlq, now=now, where=resolved, after_seq=after_seq, limit=limit
            )

        return self._runner.read(work)

    def count_dead_letters(
        self, project: str, dlq: str, *, where: DeadLetterFilter | None = None
    ) -> int:
        """How many dead letters `where` selects now: the preview of a purge or a redrive."""

        def work(tx: Transaction) -> int:
            require_queue(tx, project, dlq)
            now = self.clock.now()
            resolved = selection.resolve(
                tx, project, dlq, where=where or DeadLetterFilter(), now=now
            )
            return selection.count(
                tx, project, dlq, now=now, where=resolved, max_seq=tx.max_seq(project, dlq)
            )

        return self._runner.read(work)

    def purge_dead_letters(self, project: str, dlq: str, *, where: DeadLetterFilter) -> int:
        """Delete the dead letters `where` selects now (those that arrive later stay), a
        batch per transaction; how many. An empty filter is refused: a whole queue is
        purged by `purge`, which says so."""
        if where == DeadLetterFilter():
            raise errors.InvalidFilter(
                "a purge of dead letters takes a filter; to empty the whole queue, purge it"
            )

        def start(tx: Transaction) -> tuple[DeadLetterFilter, int]:
            require_queue(tx, project, dlq)
            now = self.clock.now()
            resolved = selection.resolve(tx, project, dlq, where=where, now=now)
            return resolved, tx.max_seq(project, dlq)

        resolved, max_seq = self._runner.read(start)

        def batch(after: int) -> tuple[int, int, bool]:
            def work(tx: Transaction, _: Pending) -> tuple[int, int, bool]:
                queue = require_queue(tx, project, dlq)
                now = self.clock.now()
                page = selection.listed(
                    tx,
                    project,
                    dlq,
                    now=now,
                    where=resolved,
                    after_seq=after,
                    limit=PURGE_BATCH,
                    max_seq=max_seq,
                )
                ids = [m.id for m in page]
                gone = tx.delete_messages(project, dlq, ids) if ids else 0
                if ids and queue.settings.consumer_tags:
                    tx.forget_tag_states(ids)
                return gone, page[-1].seq if page else after, len(page) < PURGE_BATCH

            return self._runner.run(work)

        total, after, done = 0, 0, False
        while not done:
            gone, after, done = batch(after)
            total += gone
        return total

    def edit_dead_letter(
        self,
        project: str,
        dlq: str,
        message_id: str,
        *,
        patch: MessagePatch,
        by: dict[str, Any],
        redrive_it: bool = False,
    ) -> tuple[Message, RedriveTask | None]:
        """Patch one dead letter's body or attributes where it is (`engine.edits`), kept in
        its history with `by` and the time; with `redrive_it`, a redrive task of that one
        dead letter starts in the same transaction (both happen, or neither)."""
        edits.check(patch)

        def work(tx: Transaction, pending: Pending) -> tuple[Message, RedriveTask | None]:
            queue = require_queue(tx, project, dlq)
            found = tx.get_messages(project, dlq, [message_id], lock=True)
            if not found or found[0].provenance is None:
                raise errors.MessageNotFound(f"no dead letter {message_id!r} in {dlq!r}")
            now = self.clock.now()
            limit = queue.settings.max_message_size
            m = edits.edited(found[0], patch, by=by, now=now, max_size=limit)
            tx.edit_messages(project, [m])
            if not redrive_it:
                return m, None
            where = DeadLetterFilter(message_ids=(m.id,))
            task = redrive.start(
                tx, project, dlq, destination=None, where=where, rate=None, now=now
            )
            pending.calls.append(lambda lst: lst.redrive_due(project, dlq, task.id))
            return m, task

        return self._runner.run(work)

    # Failure patterns from the analysis pipeline

    def save_patterns(
        self, project: str, dlq: str, *, found: list[dict[str, Any]]
    ) -> list[tuple[str, str]]:
        """Replace the DLQ's patterns; the alerts that raised, (kind, pattern id) each."""
        patterns.check(found)
        confirmed_only = self.subscriptions.require_confirmation
        return self._runner.run(
            lambda tx, pending: patterns.save(
                tx,
                pending,
                project,
                dlq,
                patterns=found,
                now=self.clock.now(),
                confirmed_only=confirmed_only,
            )
        )

    def merge_assignments(
        self,
        project: str,
        dlq: str,
        *,
        writer: str,
        batch: int,
        assigned: list[Assignment],
        limit: int = MAX_PATTERNS,
        max_bytes: int = MAX_PATTERNS_BYTES,
    ) -> MergedBatch:
        """Merge one writer's micro-batch into the DLQ's patterns in one transaction, once per
        (writer, batch), raising the alerts a store of patterns raises."""
        confirmed_only = self.subscriptions.require_confirmation
        return self._runner.run(
            lambda tx, pending: patterns.merge(
                tx,
                pending,
                project,
                dlq,
                writer=writer,
                batch=batch,
                assigned=assigned,
                now=self.clock.now(),
                confirmed_only=confirmed_only,
                limit=limit,
                max_bytes=max_bytes,
            )
        )

    def get_patterns(self, project: str, dlq: str) -> list[dict[str, Any]]:
        return self._runner.read(lambda tx: patterns.stored(tx, project, dlq))

    def split_pattern(
        self, project: str, dlq: str, pattern_id: str, *, position: int, dry_run: bool = False
    ) -> splits.Split:
        """Replace a stored pattern by one pattern per value its members hold at a variable
        position (from 1), in one transaction (`splits`); with `dry_run`, what it would make."""
        return self._runner.run(
            lambda tx, pending: splits.split(
                tx,
                pending,
                project,
                dlq,
                pattern_id=pattern_id,
                position=position,
                now=self.clock.now(),
                dry_run=dry_run,
            )
        )

    # Credentials (deadletter.engine.credentials seals, opens and checks them)

    def add_credential(self, work: Callable[[Transaction], None]) -> None:
        self._runner.run(lambda tx, _: work(tx))

    def credential(self, key_id: str) -> CredentialRecord | None:
        return self._runner.read(lambda tx: tx.get_credential(key_id))

    def credentials(self, project: str | None) -> list[CredentialRecord]:
        return self._runner.read(lambda tx: tx.list_credentials(project))

    def change_credential(
        self, key_id: str, change: Callable[[CredentialRecord], CredentialRecord]
    ) -> CredentialRecord | None:
        def work(tx: Transaction, _: Pending) -> CredentialRecord | None:
            current = tx.get_credential(key_id, lock=True)
            if current is not None:
                current = change(current)
                tx.update_credential(current)
            return current

        return self._runner.run(work)

    def dead_letter_sources(self, project: str, dlq: str) -> list[Queue]:
        def work(tx: Transaction) -> list[Queue]:
            require_queue(tx, project, dlq)
            return tx.sources_of(project, dlq)

        return self._runner.read(work)

    def is_redrive_source(self, project: str, name: str) -> bool:
        """Whether a redrive may start on `name`: some policy names it as DLQ, or it still
        holds dead letters (their sources deleted or their policies removed since)."""

        def work(tx: Transaction) -> bool:
            require_queue(tx, project, name)
            return redrive.is_redrive_source(tx, project, name, self.clock.now())

        return self._runner.read(work)
