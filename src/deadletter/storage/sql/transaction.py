"""The one Transaction of the SQL stores: the statements of queries.py run on a DB-API cursor.

Driver errors are not caught here: each store translates them in one place, around the
whole transaction (a failed statement fails the transaction on PostgreSQL anyway).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from deadletter.domain import routing
from deadletter.domain.model import (
    DeadLetterFilter,
    ListQuery,
    Message,
    Queue,
    QueueSettings,
)
from deadletter.domain.projects import SEPARATOR
from deadletter.domain.provenance import Provenance
from deadletter.domain.tags import DEFAULT_DONE_AT
from deadletter.storage.base import ClaimRecord, Transaction
from deadletter.storage.rows import (
    dead_letter_target,
    decode_provenance,
    hidden_class,
    message_params,
    queue_from,
)
from deadletter.storage.sql import queries as q
from deadletter.storage.sql import subscription_queries as sq
from deadletter.storage.sql.administration import AdministrationStatements
from deadletter.storage.sql.claims import ClaimStatements, claim_params
from deadletter.storage.sql.counts import CountStatements
from deadletter.storage.sql.failure_groups import FailureGroupStatements
from deadletter.storage.sql.fifo import FifoStatements
from deadletter.storage.sql.subscriptions import SubscriptionStatements
from deadletter.storage.sql.tag_queries import PURGE_TAG_STATES
from deadletter.storage.sql.tags import TagStatements


def _filter_params(where: DeadLetterFilter | None) -> dict[str, Any]:
    if where is None:
        return {"dl_source": None, "dl_reason": None, "dl_since": None, "dl_until": None,
                "dl_ids": None}  # fmt: skip
    return {
        "dl_source": where.source_queue,
        "dl_reason": where.reason.value if where.reason is not None else None,
        "dl_since": where.since,
        "dl_until": where.until,
        "dl_ids": list(where.message_ids) if where.message_ids is not None else None,
        **({"dl_tag": where.source_tag} if where.source_tag is not None else {}),
    }


def _dead_letter_page(
    project: str,
    dlq: str,
    now: float,
    where: DeadLetterFilter,
    max_seq: int,
    limit: int,
    after_seq: int,
) -> dict[str, Any]:
    """The parameters of a page of `dlq`'s dead letters that `where` selects, in (`after_seq`,
    `max_seq`]: the same for the messages, their sources and their provenances."""
    return {"project": project, "queue": dlq, "now": now, "max_seq": max_seq,
            "after_seq": after_seq, "limit": limit, **_filter_params(where)}  # fmt: skip


def _narrowed(sql: str, params: Mapping[str, Any]) -> str:
    """The variant of `sql` for the dead-letter filters given: each of source and tag has one,
    so that the statements without them keep their plans."""
    if params.get("dl_source") is not None:
        sql = q.by_source(sql)
    return q.by_source_tag(sql) if "dl_tag" in params else sql


def _delivery_params(m: Message) -> dict[str, Any]:
    return {
        "visible_at": m.visible_at,
        "claim_id": m.claim_id,
        "claim_expires_at": m.claim_expires_at,
        "claim_count": m.claim_count,
        "first_claimed_at": m.first_claimed_at,
        "expires_at": m.expires_at,
        "dl_due_at": m.dead_letter_due_at,
        "hidden": hidden_class(m),
        "id": m.id,
    }


def _source(m: Message) -> str:
    """The dead-letter source a depth count files `m` under ('' for none)."""
    return m.provenance.source_queue if m.provenance is not None else ""


class SQLTransaction(
    ClaimStatements,
    FifoStatements,
    CountStatements,
    TagStatements,
    SubscriptionStatements,
    AdministrationStatements,
    FailureGroupStatements,
    Transaction,
):
    """The one `Transaction` of both SQL stores; the counts, stats and counters, consumer
    tags, subscriptions, FIFO groups and deduplication ids, and the administration
    (credentials, templates, redrive tasks, failure patterns) are in their own parts
    (`counts`, `tags`, `subscriptions`, `fifo`, `administration`), claims in `claims`. Every
    statement here that adds, moves, hides, shows or removes messages changes the counts of
    `counts` in the same transaction."""

    # Queues

    def get_queue(self, project: str, name: str, lock: bool = False) -> Queue | None:
        row = self._queue_row(project, name, lock)
        if row is None:
            return None
        self._note_subscriptions(project, name, int(row["subscriptions"]))
        return queue_from(row)

    def _queue_row(self, project: str, name: str, lock: bool) -> Any:
        key = {"project": project, "name": name}
        return self.one(q.GET_QUEUE_LOCKED if lock else q.GET_QUEUE, key)

    def count_queues(self, project: str) -> int:
        # SQLite's writer holds the whole database: no other count runs beside this one.
        prefix = project + SEPARATOR
        key = {"project": project, "n": len(prefix), "prefix": prefix}
        return int(self.one(q.COUNT_QUEUES, key)["n"])

    def insert_queue(self, queue: Queue) -> None:
        self.run(
            q.INSERT_QUEUE,
            {
                "project": queue.project,
                "name": queue.name,
                "settings": json.dumps(queue.settings.to_dict()),
                "dlq_target": dead_letter_target(queue.settings),
                "created_at": queue.created_at,
                "updated_at": queue.updated_at,
            },
        )

    def update_queue(self, project: str, name: str, settings: QueueSettings, now: float) -> None:
        self.run(
            q.UPDATE_QUEUE,
            {
                "settings": json.dumps(settings.to_dict()),
                "dlq_target": dead_letter_target(settings),
                "now": now,
                "project": project,
                "name": name,
            },
        )

    def delete_queue(self, project: str, name: str) -> bool:
        key = {"project": project, "name": name}
        gone = self.run(q.DELETE_QUEUE, key)
        for sql in (*q.DELETE_QUEUE_ROWS, *sq.DELETE_QUEUE_SUBSCRIPTIONS):
            self.run(sql, key)
        self.d.forget_queue(self, project, name)
        self._forget_places(name)
        return gone > 0

    def list_queues(
        self, project: str, prefix: str | None, after: str | None, limit: int
    ) -> list[Queue]:
        params = {"project": project, "after": after or "", "prefix": prefix or None}
        return [queue_from(r) for r in self.all(q.LIST_QUEUES, {**params, "limit": limit})]

    def sources_of(self, project: str, dlq: str) -> list[Queue]:
        # A queue is indexed by one DLQ; its routes and tags may name others.
        queues = (queue_from(r) for r in self.all(q.DEAD_LETTER_TARGETS, {"project": project}))
        return sorted(
            (queue for queue in queues if dlq in routing.names(queue.settings)),
            key=lambda queue: queue.name,
        )

    def dead_letter_targets(self, project: str) -> set[str]:
        queues = (queue_from(r) for r in self.all(q.DEAD_LETTER_TARGETS, {"project": project}))
        return {name for queue in queues for name in routing.active_targets(queue.settings)}

    # Messages

    def insert_messages(self, project: str, messages: Sequence[Message]) -> list[Message]:
        if not messages:
            return []
        stored = self.d.numbered(self, project, messages)
        rows = [message_params(project, m) for m in stored]
        with self.together():
            self.run_many(q.INSERT_MESSAGE, rows)
            self._add_depths(project, Counter((m.queue, _source(m)) for m in stored))
            self._add_hidden(project, Counter((r["queue"], r["hidden"]) for r in rows))
        for r in rows:
            self._note_place(r)
        return stored

    def get_messages(
        self, project: str, queue: str, ids: Sequence[str], lock: bool = False
    ) -> list[Message]:
        return self._messages(
            q.GET_MESSAGES_LOCKED if lock else q.GET_MESSAGES,
            {"project": project, "queue": queue, "ids": list(ids)},
        )

    def _oldest_of_both(
        self, ready: str, hidden: str, params: Mapping[str, Any], limit: int
    ) -> list[Message]:
        """The oldest `limit` of the messages that `ready` and `hidden` (queries.py) find; on
        PostgreSQL the few rows of either beyond them stay locked until this commits."""
        both = self._messages(ready, params) + self._messages(hidden, params)
        return sorted(both, key=lambda m: m.seq)[:limit]

    def claimable(self, project: str, queue: str, now: float, limit: int) -> list[Message]:
        params = {"project": project, "queue": queue, "now": now, "limit": limit}
        return self._oldest_of_both(q.CLAIMABLE_READY, q.CLAIMABLE_HIDDEN, params, limit)

    def list_messages(
        self, project: str, queue: str, now: float, query: ListQuery
    ) -> list[Message]:
        params = {
            "project": project,
            "queue": queue,
            "now": now,
            "after_seq": query.after_seq,
            "max_seq": query.max_seq,
            "include_claimed": query.include_claimed,
            "include_delayed": query.include_delayed,
            "exclude_client_id": query.exclude_client_id,
            "limit": query.limit,
            **_filter_params(query.dead_letters),
        }
        if query.include_claimed or query.include_delayed:
            return self._messages(_narrowed(q.LIST_MESSAGES, params), params)
        ready, hidden = _narrowed(q.LIST_READY, params), _narrowed(q.LIST_HIDDEN, params)
        return self._oldest_of_both(ready, hidden, params, query.limit)

    def dead_letters(
        self,
        project: str,
        dlq: str,
        now: float,
        where: DeadLetterFilter,
        max_seq: int,
        limit: int,
        lock: bool,
        after_seq: int = 0,
    ) -> list[Message]:
        params = _dead_letter_page(project, dlq, now, where, max_seq, limit, after_seq)
        return self._messages(
            _narrowed(q.DEAD_LETTERS_LOCKED if lock else q.DEAD_LETTERS, params), params
        )

    def dead_letter_sources(
        self,
        project: str,
        dlq: str,
        now: float,
        where: DeadLetterFilter,
        max_seq: int,
        limit: int,
        after_seq: int,
    ) -> list[tuple[str, int, str | None, str | None]]:
        params = _dead_letter_page(project, dlq, now, where, max_seq, limit, after_seq)
        rows = self.all(_narrowed(q.DEAD_LETTER_SOURCES_LOCKED, params), params)
        for r in rows:
            self._note_place(r)
        return [(r["id"], int(r["seq"]), r["dl_source"], r["dl_tag"]) for r in rows]

    def dead_letter_provenances(
        self,
        project: str,
        dlq: str,
        now: float,
        where: DeadLetterFilter,
        max_seq: int,
        limit: int,
        after_seq: int,
    ) -> list[tuple[str, int, Provenance | None]]:
        params = _dead_letter_page(project, dlq, now, where, max_seq, limit, after_seq)
        rows = self.all(_narrowed(q.DEAD_LETTER_PROVENANCES, params), params)
        return [(r["id"], int(r["seq"]), decode_provenance(r["provenance"])) for r in rows]

    def redrive_messages(
        self,
        project: str,
        ids: Sequence[str],
        destination: str,
        expires_at: float,
        event: dict[str, Any],
        now: float,
        only_tag: str | None = None,
    ) -> None:
        if not ids:
            return
        before = self.places_before(project, ids)
        # A tag's redriven dead letter is done for the untagged consumers from the start.
        visible_at = now if only_tag is None else DEFAULT_DONE_AT
        params = {"project": project, "queue": destination, "expires_at": expires_at,
                  "event": json.dumps(event), "now": now, "visible_at": visible_at,
                  "only_tag": only_tag}  # fmt: skip
        # A tag's redriven dead letter is hidden from the untagged consumers (class 1).
        hidden = 0 if only_tag is None else 1
        self.d.redrive_in_place(self, project, ids, {**params, "hidden": hidden})
        depths = Counter({(destination, ""): len(ids)})
        self._move_counts(
            project, before.values(), depths, Counter({(destination, hidden): len(ids)})
        )
        for i in ids:  # they have new ids now
            self._places.pop(i, None)

    def count_dead_letters(
        self, project: str, dlq: str, now: float, where: DeadLetterFilter, max_seq: int
    ) -> int:
        by_source_at_most = where == DeadLetterFilter(source_queue=where.source_queue)
        if by_source_at_most and max_seq >= self.max_seq(project, dlq):
            # The whole DLQ, or one source's part of it: its kept depths answer, where a count
            # would read every dead letter (half a second at a million).
            depths = self._depths(project, dlq, now)
            if where.source_queue is None:
                return sum(depths.values())
            return depths.get(where.source_queue, 0)
        params = {"project": project, "queue": dlq, "now": now, "max_seq": max_seq}
        params = {**params, **_filter_params(where)}
        row = self.one(_narrowed(q.COUNT_DEAD_LETTERS, params), params)
        return int(row["n"])

    def max_seq(self, project: str, queue: str) -> int:
        return int(self.one(q.MAX_SEQ, {"project": project, "queue": queue})["n"])

    def oldest(self, project: str, queue: str, now: float, after: int, limit: int) -> list[Message]:
        params = {"project": project, "queue": queue, "now": now, "after": after, "limit": limit}
        return self._messages(q.OLDEST, params)

    def update_messages(self, project: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        before = self.places_before(project, [m.id for m in messages])
        rows = [_delivery_params(m) for m in messages]
        changes: Counter[tuple[str, int]] = Counter()
        for m, r in zip(messages, rows, strict=True):
            place = before.get(m.id)
            if place is not None and place[2] != r["hidden"]:  # None: no such row, not written
                queue, source, was = place
                changes[(queue, was)] -= 1
                changes[(queue, r["hidden"])] += 1
                self._places[m.id] = (queue, source, r["hidden"])
        with self.together():
            self.run_many(q.UPDATE_MESSAGE, rows)
            self._add_hidden(project, changes)

    def claim_messages(
        self, project: str, messages: Sequence[Message], now: float, live_until: float
    ) -> None:
        if not messages:
            return
        first = messages[0]
        assert first.claim_id is not None and first.claim_expires_at is not None
        ids = [m.id for m in messages]
        self._claim_rows(project, ids, first.claim_id, first.claim_expires_at, now, live_until)

    def claim_next(
        self, claim: ClaimRecord, *, now: float, limit: int, live_until: float
    ) -> list[Message]:
        found = self.claimable(claim.project, claim.queue, now, limit)
        if found:
            ids = [m.id for m in found]
            self._claim_rows(claim.project, ids, claim.id, claim.expires_at, now, live_until)
            self.run(q.RECORD_CLAIM, claim_params(claim))
        return found

    def _claim_rows(
        self,
        project: str,
        ids: list[str],
        claim_id: str,
        expires: float,
        now: float,
        live_until: float,
    ) -> None:
        hidden = 2  # claimed (`hidden_class`)
        changes: Counter[tuple[str, int]] = Counter()
        for i, (queue, source, was) in self.places_before(project, ids).items():
            if was != hidden:
                changes[(queue, was)] -= 1
                changes[(queue, hidden)] += 1
                self._places[i] = (queue, source, hidden)
        params = {"claim_id": claim_id, "expires": expires, "now": now,
                  "live_until": live_until, "hidden": hidden, "ids": ids}  # fmt: skip
        with self.together():
            self.run(q.CLAIM_MESSAGES, params)
            self._add_hidden(project, changes)

    def move_messages(self, project: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        moved = self.d.numbered(self, project, messages)
        ids = [m.id for m in moved]
        before = self.places_before(project, ids)
        rows = [message_params(project, m) for m in moved]
        self.run_many(q.MOVE_MESSAGE, rows)
        for r in rows:
            self._note_place(r)
        depths = Counter((m.queue, _source(m)) for m in moved if m.id in before)
        hidden = Counter((r["queue"], r["hidden"]) for r in rows if r["id"] in before)
        self._move_counts(project, before.values(), depths, hidden)

    def edit_messages(self, project: str, messages: Sequence[Message]) -> None:
        keys = ("id", "project", "body", "attributes", "history")
        rows = [{k: v for k, v in message_params(project, m).items() if k in keys}
                for m in messages]  # fmt: skip
        if rows:
            self.run_many(q.EDIT_MESSAGE, rows)

    def delete_messages(self, project: str, queue: str, ids: Sequence[str]) -> int:
        rows = self.all(q.DELETE_MESSAGES, {"project": project, "queue": queue, "ids": list(ids)})
        for i in ids:
            self._places.pop(i, None)
        return self._remove_depths(project, queue, rows)

    def delete_unfinished(self, project: str, queue: str, ids: Sequence[str]) -> int:
        params = {"project": project, "queue": queue, "ids": list(ids), "done": DEFAULT_DONE_AT}
        rows = self.all(q.DELETE_UNFINISHED, params)
        for i in ids:
            self._places.pop(i, None)
        return self._remove_depths(project, queue, rows)

    def delete_held(
        self, project: str, queue: str, ids: Sequence[str], claim_id: str, now: float, live: bool
    ) -> list[str]:
        of_queue = {"project": project, "queue": queue, "ids": list(ids)}
        held = {"claim": claim_id, "now": now, "lapsed": not live, "done": DEFAULT_DONE_AT}
        rows = self.all(q.DELETE_HELD, {**of_queue, **held})
        gone = [str(r["id"]) for r in rows]
        for i in gone:
            self._places.pop(i, None)
        self._remove_depths(project, queue, rows)
        return gone

    def purge(self, project: str, queue: str) -> int:
        key = {"project": project, "queue": queue}
        self.run(q.PURGE_CLAIMS, key)
        self.run(PURGE_TAG_STATES, key)
        self._forget_places(queue)
        return self._remove_depths(project, queue, self.all(q.PURGE_MESSAGES, key))

    def _forget_places(self, queue: str) -> None:
        """Forget the rows of a queue emptied (of any project: a later write reads anew)."""
        self._places = {i: p for i, p in self._places.items() if p[0] != queue}

    def claimed_by(
        self, project: str, queue: str, claim_id: str, lock: bool = False
    ) -> list[Message]:
        return self._messages(
            q.CLAIMED_BY_LOCKED if lock else q.CLAIMED_BY,
            {"project": project, "queue": queue, "claim_id": claim_id},
        )

    def expired(self, now: float, limit: int) -> list[tuple[str, Message]]:
        rows = self.all(q.EXPIRED, {"now": now, "limit": limit})
        return [(r["project"], self._locked_message(r)) for r in rows]

    def due_dead_letters(self, now: float, limit: int) -> list[tuple[str, str | None, Message]]:
        params = {"now": now, "limit": limit}
        due: list[tuple[str, str | None, Message]] = [
            (r["project"], None, self._locked_message(r))
            for r in self.all(q.DUE_DEAD_LETTERS, params)
        ]
        return due + self.due_tag_dead_letters(params)

    def wipe(self) -> None:
        for table in sq.SUBSCRIPTION_TABLES:
            self.run(f"DELETE FROM {table}")
        self.d.wipe(self)
        self._places.clear()
