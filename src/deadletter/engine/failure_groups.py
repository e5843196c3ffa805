"""Failure groups as units, the engine's part of its façade: filters saved on a DLQ by name,
a selection archived out of the DLQ's active view and restored, discarded with a record of
what and why, the archive's retention swept, and a retried group followed.

Archived dead letters leave the DLQ's messages for a table of their own, so that nothing
that reads a queue (counts, claims, the expiry sweep, browse, redrive, purge, the analysis)
meets them; only the archive's own operations read them, and evaluate the whole filter on
each (`selection.holds`), a page at a time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from deadletter.clock import Clock
from deadletter.domain import errors, names
from deadletter.domain.failure_groups import (
    DEFAULT_RETENTION,
    MAX_REASON,
    MAX_RETENTION,
    MAX_SAVED_FILTERS,
    MIN_RETENTION,
    RETENTION_ENDED,
    Archived,
    Departure,
    DiscardRecord,
    Follow,
    SavedFilter,
)
from deadletter.domain.model import DeadLetterFilter, Message
from deadletter.engine import bounds, patterns, redrive, selection
from deadletter.engine.ids import new_id
from deadletter.engine.lookups import require_queue
from deadletter.engine.transactions import Pending, Runner
from deadletter.storage.base import Transaction

# Dead letters one transaction archives, restores or discards.
BATCH = 1000
T = TypeVar("T")


class FailureGroupOperations:
    clock: Clock
    _runner: Runner

    # Saved filters

    def save_filter(
        self, project: str, dlq: str, *, name: str, where: DeadLetterFilter
    ) -> tuple[SavedFilter, bool]:
        """Save `where` on the DLQ as `name` (replacing a filter of that name); the filter
        and whether it is new. It is kept as given: its ages stay relative."""
        _check_name(name)
        if where.saved is not None:
            raise errors.InvalidFilter("a saved filter cannot name another saved filter")
        if where == DeadLetterFilter():
            raise errors.InvalidFilter("a saved filter selects something: give it a filter")

        def work(tx: Transaction, _: Pending) -> tuple[SavedFilter, bool]:
            require_queue(tx, project, dlq)
            if where.pattern_id is not None:
                patterns.message_ids(patterns.stored(tx, project, dlq), where.pattern_id)
            now = self.clock.now()
            old = tx.get_filter(project, dlq, name)
            if old is None and len(tx.list_filters(project, dlq)) >= MAX_SAVED_FILTERS:
                raise errors.LimitExceeded(f"a DLQ saves at most {MAX_SAVED_FILTERS} filters")
            saved = SavedFilter(name, where, old.created_at if old else now, now)
            tx.save_filter(project, dlq, saved)
            return saved, old is None

        return self._runner.run(work)

    def get_filter(self, project: str, dlq: str, *, name: str) -> SavedFilter:
        def work(tx: Transaction) -> SavedFilter:
            require_queue(tx, project, dlq)
            found = tx.get_filter(project, dlq, name)
            if found is None:
                raise errors.FilterNotFound(f"no filter {name!r} is saved on {dlq!r}")
            return found

        return self._runner.read(work)

    def list_filters(self, project: str, dlq: str) -> list[SavedFilter]:
        def work(tx: Transaction) -> list[SavedFilter]:
            require_queue(tx, project, dlq)
            return tx.list_filters(project, dlq)

        return self._runner.read(work)

    def delete_filter(self, project: str, dlq: str, *, name: str) -> None:
        def work(tx: Transaction, _: Pending) -> None:
            require_queue(tx, project, dlq)
            if not tx.delete_filter(project, dlq, name):
                raise errors.FilterNotFound(f"no filter {name!r} is saved on {dlq!r}")

        self._runner.run(work)

    # Archive and restore

    def archive(
        self,
        project: str,
        dlq: str,
        *,
        where: DeadLetterFilter,
        retention: int | None = None,
        by: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> int:
        """Move the dead letters `where` selects now out of the DLQ's active view, kept for
        `retention` seconds (then the sweep deletes them, with a record); how many (with
        `dry_run`, how many it would, and nothing moves)."""
        _check_selection(where, "an archive")
        keep = check_retention(retention)
        resolved, max_seq = self._selected(project, dlq, where)
        if dry_run:
            return self._runner.read(
                lambda tx: _archivable(
                    tx, project, dlq, where=resolved, max_seq=max_seq, now=self.clock.now()
                )
            )

        def batch(tx: Transaction, pending: Pending, after: int) -> tuple[int, int, bool]:
            now = self.clock.now()
            queue = require_queue(tx, project, dlq)
            page = selection.listed(tx, project, dlq, now=now, where=resolved, after_seq=after,
                                    limit=BATCH, max_seq=max_seq)  # fmt: skip
            # A message sent straight into the DLQ has no provenance: no dead letter to
            # archive (a restore could not bring it back), and its preview says so.
            ids = [m.id for m in page if m.provenance is not None]
            locked = tx.get_messages(project, dlq, ids, lock=True) if ids else []
            event = {"event": "archived", "at": now, "keep_until": now + keep, "by": by}
            tx.insert_archived(project, [Archived(_with(m, event), now, now + keep)
                                         for m in locked])  # fmt: skip
            gone = tx.delete_messages(project, dlq, [m.id for m in locked]) if locked else 0
            if locked and queue.settings.consumer_tags:
                tx.forget_tag_states([m.id for m in locked])
            if gone:
                pending.calls.append(lambda lst: lst.archived(project, dlq, gone))
            return gone, page[-1].seq if page else after, len(page) < BATCH

        return self._batches(batch)

    def restore(
        self,
        project: str,
        dlq: str,
        *,
        where: DeadLetterFilter | None = None,
        by: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> int:
        """Bring the archived dead letters `where` selects back into the DLQ's active view
        (at its end, their provenance and history kept); how many. A bounded DLQ takes back
        what fits under its bound, oldest first; the rest stays archived."""
        resolved, _ = self._selected(project, dlq, where or DeadLetterFilter())
        if dry_run:
            return self.count_archived(project, dlq, where=where)

        def batch(tx: Transaction, pending: Pending, after: int) -> tuple[int, int, bool]:
            now = self.clock.now()
            # The DLQ's row held, as a sender holds it: a bounded DLQ's count stays true.
            queue = require_queue(tx, project, dlq, lock=True)
            page = tx.archived(project, dlq, after_seq=after, limit=BATCH, lock=True)
            picked = [a.message for a in page if selection.holds(a.message, resolved)]
            event = {"event": "restored", "at": now, "by": by}
            back = [_restored(_with(m, event), now, queue.settings.max_ttl) for m in picked]
            # A bounded DLQ takes back what fits, in order; the rest stays archived.
            fits = bounds.room(tx, queue, back, now)
            back = back[:fits]
            tx.delete_archived(project, [m.id for m in back])
            tx.insert_messages(project, back)
            tx.add_fifo_groups(project, dlq, sorted({m.group_id for m in back if m.group_id}))
            if back:
                # Back at the DLQ's end, for its untagged consumers and each of its tags alike
                # (a tag reads what it has not touched above its cursor: no state to write).
                pending.available.add((project, dlq))
                n = len(back)
                pending.calls.append(lambda lst: lst.restored(project, dlq, n))
            full = fits < len(picked)
            return len(back), page[-1].message.seq if page else after, full or len(page) < BATCH

        return self._batches(batch)

    def list_archived(
        self,
        project: str,
        dlq: str,
        *,
        where: DeadLetterFilter | None = None,
        after_seq: int = 0,
        limit: int = 100,
    ) -> list[Archived]:
        """The archived dead letters `where` selects, after `after_seq`, by their place."""

        def work(tx: Transaction) -> list[Archived]:
            require_queue(tx, project, dlq)
            now = self.clock.now()
            resolved = selection.resolve(tx, project, dlq, where=where or DeadLetterFilter(),
                                         now=now)  # fmt: skip
            found: list[Archived] = []
            after = after_seq
            while True:
                page = tx.archived(project, dlq, after_seq=after, limit=selection.SCAN)
                found.extend(a for a in page if selection.holds(a.message, resolved))
                if len(found) >= limit or len(page) < selection.SCAN:
                    return found[:limit]
                after = page[-1].message.seq

        return self._runner.read(work)

    def count_archived(
        self, project: str, dlq: str, *, where: DeadLetterFilter | None = None
    ) -> int:
        total, after = 0, 0
        while True:
            page = self.list_archived(project, dlq, where=where, after_seq=after, limit=BATCH)
            total += len(page)
            if len(page) < BATCH:
                return total
            after = page[-1].message.seq

    def sweep_archives(self, limit: int = BATCH) -> int:
        """Delete archived dead letters whose retention ended, one record per DLQ in its
        discard log; how many (`limit` means there may be more)."""

        def work(tx: Transaction, _: Pending) -> int:
            now = self.clock.now()
            due = tx.archives_due(now, limit)
            by_dlq: dict[tuple[str, str], list[str]] = defaultdict(list)
            for project, a in due:
                by_dlq[(project, a.message.queue)].append(a.message.id)
            for (project, dlq), ids in by_dlq.items():
                tx.delete_archived(project, ids)
                record = DiscardRecord(new_id(), project, dlq, Departure.ARCHIVE_EXPIRED, now,
                                       None, RETENTION_ENDED, {}, 0, ())  # fmt: skip
                tx.insert_discard(record.with_more(ids))
            return len(due)

        return self._runner.run(work)

    # Discard

    def discard(
        self,
        project: str,
        dlq: str,
        *,
        where: DeadLetterFilter,
        reason: str,
        by: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> DiscardRecord:
        """Delete the dead letters `where` selects now, and keep a record of what left, why,
        who and when in the DLQ's discard log (none when nothing was selected). With
        `dry_run`, the record it would write, unwritten."""
        _check_selection(where, "a discard")
        reason = check_reason(reason)
        resolved, max_seq = self._selected(project, dlq, where)
        record = DiscardRecord(new_id(), project, dlq, Departure.DISCARDED, self.clock.now(),
                               by, reason, where.to_dict(), 0, ())  # fmt: skip
        if dry_run:
            return replace(record, count=self._count(project, dlq, resolved, max_seq))

        def batch(
            tx: Transaction, pending: Pending, after: int, kept: DiscardRecord
        ) -> tuple[DiscardRecord, int, bool]:
            queue = require_queue(tx, project, dlq)
            page = selection.listed(tx, project, dlq, now=self.clock.now(), where=resolved,
                                    after_seq=after, limit=BATCH, max_seq=max_seq)  # fmt: skip
            ids = [m.id for m in page]
            gone = tx.delete_messages(project, dlq, ids) if ids else 0
            if ids and queue.settings.consumer_tags:
                tx.forget_tag_states(ids)
            if gone:
                # The record is written with the first batch and kept whole with each next
                # one, in its transaction: it never says less or more than has gone.
                (tx.update_discard if kept.count else tx.insert_discard)(
                    done := kept.with_more(ids[:gone])
                )
                kept = done
                pending.calls.append(lambda lst: lst.discarded(project, dlq, gone))
            return kept, page[-1].seq if page else after, len(page) < BATCH

        after, done = 0, False
        while not done:
            record, after, done = self._runner.run(
                lambda tx, pending, at=after, kept=record: batch(tx, pending, at, kept)  # type: ignore[misc]
            )
        return record

    def list_discards(
        self, project: str, dlq: str, *, before: str | None = None, limit: int = 100
    ) -> list[DiscardRecord]:
        def work(tx: Transaction) -> list[DiscardRecord]:
            require_queue(tx, project, dlq)
            return tx.list_discards(project, dlq, before=before, limit=limit)

        return self._runner.read(work)

    # Following a retried group

    def follow_redrive(self, project: str, dlq: str, *, task_id: str) -> Follow:
        """Of the dead letters a redrive task sent back, how many are dead again in its DLQ:
        those that arrived after the task started with the task's id in their history (one
        statement: the store reads the history's text)."""

        def work(tx: Transaction) -> Follow:
            task = redrive.owned(tx.get_task(task_id), project, dlq, task_id)
            dead = tx.count_mentioning(project, dlq, after_seq=task.max_seq, text=task.id)
            return Follow(redriven=task.moved, came_back_dead=dead)

        return self._runner.read(work)

    # Shared steps

    def _selected(
        self, project: str, dlq: str, where: DeadLetterFilter
    ) -> tuple[DeadLetterFilter, int]:
        """`where` resolved now, and the DLQ's last place: what an operation selects is what
        the DLQ holds when it starts."""

        def work(tx: Transaction) -> tuple[DeadLetterFilter, int]:
            require_queue(tx, project, dlq)
            now = self.clock.now()
            return selection.resolve(tx, project, dlq, where=where, now=now), tx.max_seq(
                project, dlq
            )

        return self._runner.read(work)

    def _count(self, project: str, dlq: str, resolved: DeadLetterFilter, max_seq: int) -> int:
        return self._runner.read(
            lambda tx: selection.count(
                tx, project, dlq, now=self.clock.now(), where=resolved, max_seq=max_seq
            )
        )

    def _batches(self, batch: Callable[[Transaction, Pending, int], tuple[int, int, bool]]) -> int:
        """Run `batch` a transaction at a time from the start until it says it is done; the
        sum of what each moved."""
        total, after, done = 0, 0, False
        while not done:
            moved, after, done = self._runner.run(
                lambda tx, pending, at=after: batch(tx, pending, at)  # type: ignore[misc]
            )
            total += moved
        return total


def _archivable(
    tx: Transaction, project: str, dlq: str, *, where: DeadLetterFilter, max_seq: int, now: float
) -> int:
    """How many of what `where` (resolved) selects up to `max_seq` an archive takes: the
    pages it walks, read, each counted as it counts them."""
    total, after = 0, 0
    while True:
        page = selection.listed(tx, project, dlq, now=now, where=where, after_seq=after,
                                limit=BATCH, max_seq=max_seq)  # fmt: skip
        total += sum(1 for m in page if m.provenance is not None)
        if len(page) < BATCH:
            return total
        after = page[-1].seq


def check_retention(retention: int | None) -> int:
    if retention is None:
        return DEFAULT_RETENTION
    if isinstance(retention, bool) or not MIN_RETENTION <= retention <= MAX_RETENTION:
        raise errors.OutOfRange(
            f"retention must be an integer between {MIN_RETENTION} and {MAX_RETENTION} seconds"
        )
    return retention


def check_reason(reason: object) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise errors.InvalidInput("a discard needs a reason (why): say why these dead letters go")
    if len(reason) > MAX_REASON or "\x00" in reason:
        raise errors.InvalidInput(f"why is at most {MAX_REASON} characters, with no NUL")
    return reason.strip()


def _check_name(name: str) -> None:
    if not names.SAVED_FILTER.valid(name):
        raise errors.InvalidInput(f"a filter's name is {names.SAVED_FILTER.rule}")


def _check_selection(where: DeadLetterFilter, what: str) -> None:
    if where == DeadLetterFilter():
        raise errors.InvalidFilter(
            f"{what} takes a selection: a filter, a pattern_id or a saved filter"
        )


def _with(m: Message, event: dict[str, Any]) -> Message:
    return replace(m, history=(*m.history, event))


def _restored(m: Message, now: float, retention: int) -> Message:
    """An archived dead letter as it comes back: unclaimed and visible, at the DLQ's end
    (numbered anew), expiring when it would have, or, if that passed while it was archived,
    after the DLQ's retention from now. Its deliveries in the DLQ start again as they did
    when it arrived: the claim count it came with, nothing due; a tag's start from no state
    (the archive took them), as for any message above the tag's cursor."""
    placed = m.provenance.dead_lettered_at if m.provenance else now
    expires = m.expires_at if m.expires_at > now else now + retention
    arrived = m.provenance.claim_count if m.provenance else 0
    return replace(m, seq=0, visible_at=min(placed, now), ready_at=min(placed, now),
                   expires_at=expires, claim_id=None, claim_expires_at=None,
                   claim_count=arrived, dead_letter_due_at=None)  # fmt: skip


__all__ = ["FailureGroupOperations", "check_reason", "check_retention"]
