"""Rows <-> model objects, shared by the SQL backends (both store the same columns)."""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

from deadletter.domain import routing
from deadletter.domain.auto_redrive import AutoRedrive, AutoRedriveSpec, LastRound, PolicyState
from deadletter.domain.model import Attribute, DeadLetterFilter, Message, Queue, QueueSettings
from deadletter.domain.provenance import Provenance
from deadletter.domain.redrive import Canary, MessagePatch, RedriveTask, SkipReason, TaskStatus
from deadletter.domain.subscriptions import Delivery, Subscription
from deadletter.domain.templates import QueueTemplate, TemplateSettings
from deadletter.storage.base import CredentialRecord
from deadletter.storage.sql.queries import CREDENTIAL_FIELDS


class Row(Protocol):
    """A database row readable by column name (sqlite3.Row, psycopg's dict rows)."""

    def __getitem__(self, key: str, /) -> Any: ...


def encode_attributes(attributes: dict[str, Attribute]) -> str:
    if not attributes:
        return "{}"
    return json.dumps({k: v.to_dict() for k, v in attributes.items()}, separators=(",", ":"))


def decode_attributes(text: str) -> dict[str, Attribute]:
    if text == "{}":  # most messages, as `encode_attributes` writes them: no parse per row
        return {}
    return {k: Attribute(v["type"], v["value"]) for k, v in json.loads(text).items()}


def encode_provenance(provenance: Provenance | None) -> str | None:
    return json.dumps(provenance.to_dict()) if provenance else None


def decode_provenance(text: str | None) -> Provenance | None:
    return Provenance.from_dict(json.loads(text)) if text else None


def encode_history(history: tuple[dict[str, Any], ...]) -> str:
    if not history:
        return "[]"
    return json.dumps(list(history), separators=(",", ":"))


def decode_history(text: str | None) -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(text)) if text and text != "[]" else ()


def message_params(project: str, m: Message) -> dict[str, Any]:
    """The columns of `m`'s row; the dl_* columns copy the provenance for filters."""
    p = m.provenance
    return {
        "id": m.id,
        "project": project,
        "queue": m.queue,
        "seq": m.seq,
        "body": m.body,
        "attributes": encode_attributes(m.attributes),
        "enqueued_at": m.enqueued_at,
        "expires_at": m.expires_at,
        "visible_at": m.visible_at,
        "claim_id": m.claim_id,
        "claim_expires_at": m.claim_expires_at,
        "claim_count": m.claim_count,
        "first_claimed_at": m.first_claimed_at,
        "client_id": m.client_id,
        "dl_eligible": m.dead_letter_eligible,
        "provenance": encode_provenance(p),
        "dl_source": p.source_queue if p else None,
        "dl_reason": p.reason.value if p else None,
        "dl_at": p.dead_lettered_at if p else None,
        "history": encode_history(m.history),
        "dl_due_at": m.dead_letter_due_at,
        "group_id": m.group_id,
        "dedup_id": m.deduplication_id,
        "ready_at": m.ready_at,
        "only_tag": m.only_tag,
        "dl_tag": p.source_tag if p else None,
        "hidden": hidden_class(m),
    }


def hidden_class(m: Message) -> int:
    """The class `m` is written in (migration 0013): 2 claimed, 1 hidden without a claim
    (visible later than the moment it got its place in the queue), 0 ready."""
    if m.claim_id is not None:
        return 2
    placed = m.provenance.dead_lettered_at if m.provenance else m.enqueued_at
    return 1 if m.visible_at > placed else 0


# A message row's columns in the order `message_of` takes them.
MESSAGE_COLUMNS = (
    "id",
    "queue",
    "seq",
    "body",
    "attributes",
    "enqueued_at",
    "expires_at",
    "visible_at",
    "claim_id",
    "claim_expires_at",
    "claim_count",
    "first_claimed_at",
    "client_id",
    "dl_eligible",
    "provenance",
    "history",
    "dl_due_at",
    "group_id",
    "dedup_id",
    "ready_at",
    "only_tag",
)
_MESSAGE_BY_NAME = operator.itemgetter(*MESSAGE_COLUMNS)


def message_from(row: Row) -> Message:
    return message_of(_MESSAGE_BY_NAME(row))


def message_of(values: Sequence[Any]) -> Message:
    """The message of a row's MESSAGE_COLUMNS, in that order."""
    (
        id_,
        queue,
        seq,
        body,
        attributes,
        enqueued_at,
        expires_at,
        visible_at,
        claim_id,
        claim_expires_at,
        claim_count,
        first_claimed_at,
        client_id,
        dl_eligible,
        provenance,
        history,
        dl_due_at,
        group_id,
        dedup_id,
        ready_at,
        only_tag,
    ) = values[: len(MESSAGE_COLUMNS)]
    return Message(
        id=id_,
        queue=queue,
        seq=seq,
        body=bytes(body),
        attributes=decode_attributes(attributes),
        enqueued_at=enqueued_at,
        expires_at=expires_at,
        visible_at=visible_at,
        claim_id=claim_id,
        claim_expires_at=claim_expires_at,
        claim_count=claim_count,
        first_claimed_at=first_claimed_at,
        client_id=client_id,
        dead_letter_eligible=bool(dl_eligible),
        provenance=decode_provenance(provenance),
        history=decode_history(history),
        dead_letter_due_at=dl_due_at,
        group_id=group_id,
        deduplication_id=dedup_id,
        ready_at=ready_at,
        only_tag=only_tag,
    )


def with_seq(m: Message, seq: int) -> Message:
    """`m` with a sequence number (spelled out: `dataclasses.replace` is slow on hot paths)."""
    return Message(
        id=m.id,
        queue=m.queue,
        seq=seq,
        body=m.body,
        attributes=m.attributes,
        enqueued_at=m.enqueued_at,
        expires_at=m.expires_at,
        visible_at=m.visible_at,
        claim_id=m.claim_id,
        claim_expires_at=m.claim_expires_at,
        claim_count=m.claim_count,
        first_claimed_at=m.first_claimed_at,
        client_id=m.client_id,
        dead_letter_eligible=m.dead_letter_eligible,
        provenance=m.provenance,
        history=m.history,
        dead_letter_due_at=m.dead_letter_due_at,
        group_id=m.group_id,
        deduplication_id=m.deduplication_id,
        ready_at=m.ready_at,
        only_tag=m.only_tag,
    )


def queue_from(row: Row) -> Queue:
    return Queue(
        project=row["project"],
        name=row["name"],
        settings=settings_from(row["settings"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


@lru_cache(maxsize=256)
def settings_from(text: str) -> QueueSettings:
    """A queue's settings from their stored text. Every operation reads its queue's row, and
    the text rarely changes, so each text is parsed once: settings are never changed in place
    (a change is a new QueueSettings, written as a new text)."""
    return QueueSettings.from_dict(json.loads(text))


def dead_letter_target(settings: QueueSettings) -> str | None:
    return routing.first_target(settings)


def task_params(t: RedriveTask) -> dict[str, Any]:
    return {
        "id": t.id,
        "project": t.project,
        "dlq": t.dlq,
        "destination": t.destination,
        "filter": json.dumps(t.filter.to_dict()),
        "rate": t.rate,
        "status": t.status.value,
        "moved": t.moved,
        "to_move": t.to_move,
        "max_seq": t.max_seq,
        "started_at": t.started_at,
        "updated_at": t.updated_at,
        "failure_reason": t.failure_reason,
        "skipped": t.skipped,
        "skipped_ids": json.dumps([[mid, reason.value] for mid, reason in t.skipped_messages]),
        "cursor_seq": t.cursor_seq,
        "canary": json.dumps(t.canary.to_dict()) if t.canary is not None else None,
        "transform": json.dumps(t.transform.to_dict()) if t.transform is not None else None,
    }


def task_from(row: Row) -> RedriveTask:
    return RedriveTask(
        id=row["id"],
        project=row["project"],
        dlq=row["dlq"],
        destination=row["destination"],
        filter=DeadLetterFilter.from_dict(json.loads(row["filter"])),
        rate=row["rate"],
        status=TaskStatus(row["status"]),
        moved=row["moved"],
        to_move=row["to_move"],
        max_seq=row["max_seq"],
        started_at=row["started_at"],
        updated_at=row["updated_at"],
        failure_reason=row["failure_reason"],
        skipped=row["skipped"],
        skipped_messages=tuple(
            (mid, SkipReason(reason)) for mid, reason in json.loads(row["skipped_ids"])
        ),
        cursor_seq=row["cursor_seq"],
        canary=Canary.from_dict(json.loads(row["canary"])) if row["canary"] else None,
        transform=MessagePatch.from_dict(json.loads(row["transform"]))
        if row["transform"]
        else None,
    )


def auto_redrive_params(a: AutoRedrive) -> dict[str, Any]:
    return {
        "project": a.project,
        "dlq": a.dlq,
        "spec": json.dumps(a.spec.to_dict()),
        "state": a.state.value,
        "reason": a.reason,
        "next_due": a.next_due,
        "open_task": a.last_round.task_id if a.round_open and a.last_round else None,
        "progress": json.dumps(a.progress()),
        "created_at": a.created_at,
        "updated_at": a.updated_at,
    }


def auto_redrive_from(row: Row) -> AutoRedrive:
    progress = json.loads(row["progress"])
    last = progress.get("last_round")
    return AutoRedrive(
        project=row["project"],
        dlq=row["dlq"],
        spec=AutoRedriveSpec.from_dict(json.loads(row["spec"])),
        state=PolicyState(row["state"]),
        next_due=row["next_due"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        reason=row["reason"],
        rounds=progress["rounds"],
        moved=progress["moved"],
        exhausted=progress["exhausted"],
        last_round=LastRound.from_dict(last) if last else None,
    )


def subscription_params(s: Subscription) -> dict[str, Any]:
    return {
        "id": s.id,
        "project": s.project,
        "queue": s.queue,
        "subscriber": s.subscriber,
        "ttl": s.ttl,
        "options": json.dumps(s.options),
        "confirmed": s.confirmed,
        "created_at": s.created_at,
        "expires_at": s.expires_at,
    }


def subscription_from(row: Row) -> Subscription:
    return Subscription(
        id=row["id"],
        project=row["project"],
        queue=row["queue"],
        subscriber=row["subscriber"],
        ttl=int(row["ttl"]),
        options=json.loads(row["options"]),
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        confirmed=bool(row["confirmed"]),
    )


def delivery_params(d: Delivery) -> dict[str, Any]:
    return {
        "id": d.id,
        "project": d.project,
        "queue": d.queue,
        "subscription_id": d.subscription_id,
        "subscriber": d.subscriber,
        "options": json.dumps(d.options),
        "message_id": d.message_id,
        "body": d.body,
        "ttl": d.ttl,
        "enqueued_at": d.enqueued_at,
        "due_at": d.due_at,
        "attempts": d.attempts,
        "last_error": d.last_error,
    }


def delivery_from(row: Row) -> Delivery:
    return Delivery(
        id=row["id"],
        project=row["project"],
        queue=row["queue"],
        subscription_id=row["subscription_id"],
        subscriber=row["subscriber"],
        options=json.loads(row["options"]),
        message_id=row["message_id"],
        body=bytes(row["body"]),
        ttl=int(row["ttl"]),
        enqueued_at=row["enqueued_at"],
        due_at=row["due_at"],
        attempts=int(row["attempts"]),
        last_error=row["last_error"],
    )


def credential_params(c: CredentialRecord) -> dict[str, Any]:
    return {f: getattr(c, f) for f in CREDENTIAL_FIELDS}


def credential_from(r: Row) -> CredentialRecord:
    return CredentialRecord(
        key_id=r["key_id"],
        project=r["project"],
        role=r["role"],
        account_id=r["account_id"],
        sealed_secret=r["sealed_secret"],
        created_at=r["created_at"],
        revoked=bool(r["revoked"]),
    )


def template_params(t: QueueTemplate) -> dict[str, Any]:
    return {
        "project": t.project,
        "name": t.name,
        "pattern": t.pattern,
        "settings": json.dumps(t.settings.to_dict()),
        "created_at": t.created_at,
        "updated_at": t.updated_at,
    }


def template_from(r: Row) -> QueueTemplate:
    return QueueTemplate(
        project=r["project"],
        name=r["name"],
        pattern=r["pattern"],
        settings=TemplateSettings.from_dict(json.loads(r["settings"])),
        created_at=r["created_at"],
        updated_at=r["updated_at"],
    )
