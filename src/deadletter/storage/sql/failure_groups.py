"""Statements of failure groups: filters saved on a DLQ, its archived dead letters (each kept
whole, as one JSON text beside its body), and its discard log."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from deadletter.domain.failure_groups import Archived, Departure, DiscardRecord, SavedFilter
from deadletter.domain.model import DeadLetterFilter, Message
from deadletter.storage.rows import (
    decode_attributes,
    decode_history,
    decode_provenance,
    encode_attributes,
    encode_history,
    encode_provenance,
)
from deadletter.storage.sql import group_queries as gq
from deadletter.storage.sql.executor import Executor


class FailureGroupStatements(Executor):
    # Saved filters

    def save_filter(self, project: str, dlq: str, saved: SavedFilter) -> None:
        self.run(gq.SAVE_FILTER, {"project": project, "dlq": dlq, "name": saved.name,
                                  "filter": json.dumps(saved.filter.to_dict()),
                                  "created_at": saved.created_at,
                                  "updated_at": saved.updated_at})  # fmt: skip

    def get_filter(self, project: str, dlq: str, name: str) -> SavedFilter | None:
        r = self.one(gq.GET_FILTER, {"project": project, "dlq": dlq, "name": name})
        return _saved_from(r) if r else None

    def list_filters(self, project: str, dlq: str) -> list[SavedFilter]:
        return [_saved_from(r) for r in self.all(gq.LIST_FILTERS, {"project": project, "dlq": dlq})]

    def delete_filter(self, project: str, dlq: str, name: str) -> bool:
        return self.run(gq.DELETE_FILTER, {"project": project, "dlq": dlq, "name": name}) > 0

    # Archived dead letters

    def insert_archived(self, project: str, archived: Sequence[Archived]) -> None:
        if archived:
            self.run_many(gq.INSERT_ARCHIVED, [_archived_params(project, a) for a in archived])

    def archived(
        self, project: str, dlq: str, *, after_seq: int, limit: int, lock: bool = False
    ) -> list[Archived]:
        sql = gq.LIST_ARCHIVED_LOCKED if lock else gq.LIST_ARCHIVED
        params = {"project": project, "dlq": dlq, "after_seq": after_seq, "limit": limit}
        return [_archived_from(r) for r in self.all(sql, params)]

    def delete_archived(self, project: str, ids: Sequence[str]) -> int:
        return self.run(gq.DELETE_ARCHIVED, {"project": project, "ids": list(ids)}) if ids else 0

    def archives_due(self, now: float, limit: int) -> list[tuple[str, Archived]]:
        rows = self.all(gq.ARCHIVES_DUE, {"now": now, "limit": limit})
        return [(r["project"], _archived_from(r)) for r in rows]

    def count_mentioning(self, project: str, dlq: str, *, after_seq: int, text: str) -> int:
        # Ids and task ids hold no LIKE wildcard; anything else is escaped by refusal.
        assert not any(c in text for c in "%_\\"), text
        params = {"project": project, "dlq": dlq, "after_seq": after_seq,
                  "pattern": f'%"{text}"%'}  # fmt: skip
        return int(self.one(gq.COUNT_MENTIONING, params)["n"])

    # The discard log

    def insert_discard(self, record: DiscardRecord) -> None:
        self.run(gq.INSERT_DISCARD, _discard_params(record))

    def update_discard(self, record: DiscardRecord) -> None:
        self.run(gq.UPDATE_DISCARD, _discard_params(record))

    def list_discards(
        self, project: str, dlq: str, *, before: str | None, limit: int
    ) -> list[DiscardRecord]:
        params = {"project": project, "dlq": dlq, "before": before, "limit": limit}
        return [_discard_from(r) for r in self.all(gq.LIST_DISCARDS, params)]


def _saved_from(r: Any) -> SavedFilter:
    return SavedFilter(
        name=r["name"],
        filter=DeadLetterFilter.from_dict(json.loads(r["filter"])),
        created_at=r["created_at"],
        updated_at=r["updated_at"],
    )


def _archived_params(project: str, a: Archived) -> dict[str, Any]:
    """An archived dead letter's row: its body, and the rest of it as one JSON text."""
    m = a.message
    doc = {
        "queue": m.queue,
        "attributes": encode_attributes(m.attributes),
        "enqueued_at": m.enqueued_at,
        "expires_at": m.expires_at,
        "claim_count": m.claim_count,
        "first_claimed_at": m.first_claimed_at,
        "client_id": m.client_id,
        "dead_letter_eligible": m.dead_letter_eligible,
        "provenance": encode_provenance(m.provenance),
        "history": encode_history(m.history),
        "group_id": m.group_id,
        "deduplication_id": m.deduplication_id,
    }
    return {"id": m.id, "project": project, "dlq": m.queue, "seq": m.seq, "body": bytes(m.body),
            "message": json.dumps(doc), "archived_at": a.archived_at,
            "keep_until": a.keep_until}  # fmt: skip


def _archived_from(r: Any) -> Archived:
    doc = json.loads(r["message"])
    message = Message(
        id=r["id"],
        queue=doc["queue"],
        seq=int(r["seq"]),
        body=bytes(r["body"]),
        attributes=decode_attributes(doc["attributes"]),
        enqueued_at=doc["enqueued_at"],
        expires_at=doc["expires_at"],
        visible_at=r["archived_at"],
        claim_id=None,
        claim_expires_at=None,
        claim_count=doc["claim_count"],
        first_claimed_at=doc["first_claimed_at"],
        client_id=doc["client_id"],
        dead_letter_eligible=doc["dead_letter_eligible"],
        provenance=decode_provenance(doc["provenance"]),
        history=decode_history(doc["history"]),
        group_id=doc["group_id"],
        deduplication_id=doc["deduplication_id"],
    )
    return Archived(message, r["archived_at"], r["keep_until"])


def _discard_params(d: DiscardRecord) -> dict[str, Any]:
    return {"id": d.id, "project": d.project, "dlq": d.dlq, "kind": d.kind.value, "at": d.at,
            "by_whom": json.dumps(d.by) if d.by is not None else None, "reason": d.reason,
            "selection": json.dumps(d.selection), "count": d.count,
            "sample_ids": json.dumps(list(d.sample_ids))}  # fmt: skip


def _discard_from(r: Any) -> DiscardRecord:
    return DiscardRecord(
        id=r["id"],
        project=r["project"],
        dlq=r["dlq"],
        kind=Departure(r["kind"]),
        at=r["at"],
        by=json.loads(r["by_whom"]) if r["by_whom"] is not None else None,
        reason=r["reason"],
        selection=json.loads(r["selection"]),
        count=int(r["count"]),
        sample_ids=tuple(json.loads(r["sample_ids"])),
    )
