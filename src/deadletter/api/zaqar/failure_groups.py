"""Failure groups as units on the Zaqar face: filters saved on a DLQ, a selection archived,
restored or discarded (each with a preview), the archive browsed, the discard log."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar import dead_letters as active
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.dead_letters import actor, query_filter
from deadletter.api.zaqar.errors import bad_request
from deadletter.api.zaqar.parse import is_int, redrive_ids
from deadletter.api.zaqar.serialize import iso
from deadletter.domain import filters, names
from deadletter.domain.failure_groups import (
    MAX_RETENTION,
    MIN_RETENTION,
    Archived,
    DiscardRecord,
    SavedFilter,
)
from deadletter.domain.model import DeadLetterFilter

# The fields of a saved filter: the filter language, but a saved filter's own name.
SAVED_FILTER_FIELDS = frozenset(k for k in filters.FILTER_KEYS if k != "filter")
# A group's selection: the filter language, or the ids of some dead letters.
ARCHIVE_FIELDS = frozenset({*filters.FILTER_KEYS, "message_ids", "retention", "dry_run"})
RESTORE_FIELDS = frozenset({*filters.FILTER_KEYS, "message_ids", "dry_run"})
# `reason` is the filter's (why they died); why they go is `why`.
DISCARD_FIELDS = frozenset({*filters.FILTER_KEYS, "message_ids", "why", "dry_run"})


def body_filter(doc: dict[str, Any], *, ids: bool = True) -> DeadLetterFilter:
    """The filter of a body's fields of the language, and its `message_ids` (where `ids`);
    a field of no value is refused (`filters.from_json`, `redrive_ids`), not read as no
    filter: a group's selection says what it is."""
    where = filters.from_json(doc)
    return replace(where, message_ids=redrive_ids(doc)) if ids else where


def _dry_run(doc: dict[str, Any]) -> bool:
    value = doc.get("dry_run", False)
    if not isinstance(value, bool):
        raise bad_request("dry_run must be true or false.")
    return value


# Saved filters


def filter_fields(where: DeadLetterFilter) -> dict[str, Any]:
    """A filter as the language names its fields, those set only (and its ids, if any)."""
    out: dict[str, Any] = {}
    for key in filters.FILTER_KEYS:
        name = {"attribute": "attributes", "filter": "saved"}.get(key, key)
        value = getattr(where, name)
        if value in (None, ()):
            continue
        if key == "attribute":
            value = [n if v is None else f"{n}={v}" for n, v in value]
        elif key in ("since", "until"):
            value = iso(value)
        elif key == "reason":
            value = value.value
        out[key] = value
    if where.message_ids is not None:
        out["message_ids"] = list(where.message_ids)
    return out


def saved_json(queue: str, saved: SavedFilter) -> dict[str, Any]:
    return {
        "name": saved.name,
        "href": f"/v2/queues/{queue}/dead_letters/filters/{saved.name}",
        "filter": filter_fields(saved.filter),
        "created_at": iso(saved.created_at),
        "updated_at": iso(saved.updated_at),
    }


def _name(ctx: Ctx) -> str:
    """The filter's name, checked whole before the handler runs (`context.PATH_NAMES`)."""
    return str(ctx.path["name"])


def put_saved_filter(ctx: Ctx) -> Response:
    name = _name(ctx)
    where = body_filter(ctx.json_object(empty_ok=False), ids=False)
    saved, created = ctx.engine.save_filter(ctx.project, ctx.queue, name=name, where=where)
    out = saved_json(ctx.queue, saved)
    return JSONResponse(out, status_code=201 if created else 200, headers={"Location": out["href"]})


def get_saved_filter(ctx: Ctx) -> Response:
    saved = ctx.engine.get_filter(ctx.project, ctx.queue, name=_name(ctx))
    return JSONResponse(saved_json(ctx.queue, saved))


def list_saved_filters(ctx: Ctx) -> Response:
    found = ctx.engine.list_filters(ctx.project, ctx.queue)
    return JSONResponse({"filters": [saved_json(ctx.queue, s) for s in found]})


def delete_saved_filter(ctx: Ctx) -> Response:
    ctx.engine.delete_filter(ctx.project, ctx.queue, name=_name(ctx))
    return Response(status_code=204)


# Archive and restore


def archive_dead_letters(ctx: Ctx) -> Response:
    doc = ctx.json_object(empty_ok=False)
    retention = doc.get("retention")
    if "retention" in doc and (
        retention is None or not (is_int(retention) and MIN_RETENTION <= retention <= MAX_RETENTION)
    ):
        raise bad_request(
            f"retention must be an integer between {MIN_RETENTION} and {MAX_RETENTION} seconds."
        )
    dry_run = _dry_run(doc)
    count = ctx.engine.archive(ctx.project, ctx.queue, where=body_filter(doc),
                               retention=retention, by=actor(ctx), dry_run=dry_run)  # fmt: skip
    return JSONResponse({"dry_run": True, "to_archive": count} if dry_run else {"archived": count})


def restore_dead_letters(ctx: Ctx) -> Response:
    doc = ctx.json_object()
    dry_run = _dry_run(doc)
    count = ctx.engine.restore(
        ctx.project, ctx.queue, where=body_filter(doc), by=actor(ctx), dry_run=dry_run
    )
    return JSONResponse({"dry_run": True, "to_restore": count} if dry_run else {"restored": count})


def archived_json(ctx: Ctx, a: Archived, now: float) -> dict[str, Any]:
    return {
        **ctx.message(a.message, now),
        "marker": a.message.seq,
        "archived": {"at": iso(a.archived_at), "keep_until": iso(a.keep_until)},
    }


def list_dead_letters(ctx: Ctx) -> Response:
    """Browse a DLQ; with `?archived=true`, its archive, the same way."""
    if not ctx.bool_param("archived"):
        return active.list_dead_letters(ctx)
    limit = ctx.int_param("limit", 100, 1, 1000)
    marker = ctx.int_param("marker", 0, 0, 2**63 - 1)
    found = ctx.engine.list_archived(
        ctx.project, ctx.queue, where=query_filter(ctx), after_seq=marker, limit=limit
    )
    now = ctx.now()
    messages = [archived_json(ctx, a, now) for a in found]
    return JSONResponse({"messages": messages, "links": _next(ctx, found, limit)})


def count_dead_letters(ctx: Ctx) -> Response:
    """How many dead letters a filter selects now; with `?archived=true`, in the archive."""
    if not ctx.bool_param("archived"):
        return active.count_dead_letters(ctx)
    count = ctx.engine.count_archived(ctx.project, ctx.queue, where=query_filter(ctx))
    return JSONResponse({"count": count})


def _next(ctx: Ctx, found: list[Archived], limit: int) -> list[dict[str, str]]:
    if len(found) < limit:
        return []
    params = [(k, v) for k, v in ctx.request.query_params.multi_items()
              if k not in ("marker", "limit") and v]  # fmt: skip
    query = urlencode([*params, ("marker", found[-1].message.seq), ("limit", limit)])
    return [{"rel": "next", "href": f"/v2/queues/{ctx.queue}/dead_letters?{query}"}]


# Discard


def discard_json(record: DiscardRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "kind": record.kind.value,
        "at": iso(record.at),
        "by": record.by,
        "why": record.reason,
        "selection": filter_fields(DeadLetterFilter.from_dict(record.selection)),
        "count": record.count,
        "sample_ids": list(record.sample_ids),
    }


def discard_dead_letters(ctx: Ctx) -> Response:
    doc = ctx.json_object(empty_ok=False)
    if "why" not in doc:
        raise bad_request('A discard needs "why": say why these dead letters go.')
    dry_run = _dry_run(doc)
    record = ctx.engine.discard(ctx.project, ctx.queue, where=body_filter(doc),
                                reason=doc["why"], by=actor(ctx), dry_run=dry_run)  # fmt: skip
    if dry_run:
        return JSONResponse({"dry_run": True, "to_discard": record.count})
    return JSONResponse({"discarded": record.count,
                         "record": discard_json(record) if record.count else None})  # fmt: skip


def list_discards(ctx: Ctx) -> Response:
    limit = ctx.int_param("limit", 100, 1, 1000)
    marker = ctx.params.get("marker") or None
    if marker is not None and not names.ID.valid(marker):
        raise bad_request("marker must be the id of a discard record.")
    found = ctx.engine.list_discards(ctx.project, ctx.queue, before=marker, limit=limit)
    links = []
    if len(found) == limit:
        links = [{"rel": "next", "href": f"/v2/queues/{ctx.queue}/dead_letters/discards"
                  f"?marker={found[-1].id}&limit={limit}"}]  # fmt: skip
    return JSONResponse({"discards": [discard_json(r) for r in found], "links": links})
