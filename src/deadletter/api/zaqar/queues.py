"""Zaqar queue handlers: list, create, metadata (GET/PATCH), delete, stats, purge."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar import metadata as meta
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.errors import ZaqarError, bad_request
from deadletter.api.zaqar.parse import PAGE_LIMIT, patch_op
from deadletter.api.zaqar.serialize import message_brief, next_link
from deadletter.domain import errors
from deadletter.domain.model import Queue, QueueSettings

MAX_QUEUE_METADATA = 65_536
PATCH_CONTENT_TYPE = "application/openstack-messaging-v2.0-json-patch"


def list_queues(ctx: Ctx) -> Response:
    limit = ctx.int_param("limit", 10, 1, PAGE_LIMIT)
    marker = ctx.params.get("marker") or None  # NUL is refused for every query value
    detailed = ctx.bool_param("detailed")
    queues = ctx.engine.list_queues(ctx.project, after=marker, limit=limit)
    out: dict[str, Any] = {
        "queues": [
            {"name": q.name, "href": f"/v2/queues/{q.name}"}
            | ({"metadata": meta.to_metadata(q)} if detailed else {})
            for q in queues
        ],
        "links": [],
    }
    if queues:
        out["links"] = next_link(
            "/v2/queues", {"marker": queues[-1].name, "limit": limit, "detailed": detailed}
        )
    if ctx.bool_param("with_count"):
        out["count"] = len(ctx.engine.list_queues(ctx.project, limit=1_000_000_000))
    return JSONResponse(out)


def create_queue(ctx: Ctx) -> Response:
    meta.check_queue_name(ctx.queue)
    if len(ctx.body) > MAX_QUEUE_METADATA:
        raise bad_request(f"Queue metadata may not be larger than {MAX_QUEUE_METADATA} bytes.")
    doc = ctx.json_object()
    meta.to_settings(doc)  # refused before anything is looked up, as Zaqar does
    if ctx.engine.find_queue(ctx.project, ctx.queue) is not None:
        return Response(status_code=204)
    try:
        # What the metadata leaves out comes from the template the name matches.
        ctx.engine.templates.create_queue(
            ctx.project,
            ctx.queue,
            build=lambda base: meta.to_settings(doc, base),
            base=meta.ZAQAR_DEFAULTS,
        )
    except errors.QueueAlreadyExists:
        return Response(status_code=204)
    return Response(status_code=201, headers={"Location": f"/v2/queues/{ctx.queue}"})


def get_queue(ctx: Ctx) -> Response:
    every_key = ctx.bool_param("defaults")
    return JSONResponse(meta.to_metadata(ctx.engine.get_queue(ctx.project, ctx.queue), every_key))


def patch_queue(ctx: Ctx) -> Response:
    content_type = ctx.request.headers.get("content-type", "").split(";")[0].strip()
    if content_type != PATCH_CONTENT_TYPE:
        raise ZaqarError(
            415, "Unsupported media type", f"PATCH needs Content-Type: {PATCH_CONTENT_TYPE}."
        )
    ops = ctx.json()
    if not isinstance(ops, list) or not ops:
        raise bad_request("The body must be a non-empty JSON list of patch operations.")

    def patched(queue: Queue) -> QueueSettings:
        view = meta.to_metadata(queue)
        before = dict(view)
        for op in ops:
            key, value = patch_op(op)
            # A read-only key sent back as GET showed it changes nothing (a client that
            # replaces the whole metadata sends every key it read).
            if key in meta.READ_ONLY and op["op"] != "remove" and value != view.get(key):
                raise bad_request(f"{key} is read-only.")
            if op["op"] == "remove" and key in meta.RESERVED:
                # A reserved key always exists (GET leaves it out when it holds its default):
                # removing it restores its default. Clients that replace the whole metadata
                # remove every key they omit.
                view[key] = None
                continue
            # A reserved key always exists, so replacing it is adding it; only user keys can be
            # missing.
            missing = key not in meta.RESERVED and view.get(key) is None
            if op["op"] in ("replace", "remove") and missing:
                raise ZaqarError(
                    409, "Unable to patch metadata", f"The metadata key {key!r} does not exist."
                )
            if op["op"] == "remove":
                del view[key]
            else:
                view[key] = value
        meta.settle_redelivery(before, view)
        s = queue.settings
        base = meta.ZAQAR_DEFAULTS.with_changes(
            labels=s.labels,
            extra=s.extra,
            receive_wait=s.receive_wait,
            deduplication_scope=s.deduplication_scope,
            throughput_limit=s.throughput_limit,
        )
        return meta.to_settings(view, base)

    updated = ctx.engine.change_settings(ctx.project, ctx.queue, change=patched)
    return JSONResponse(meta.to_metadata(updated))


def delete_queue(ctx: Ctx) -> Response:
    """204 whether it existed or not, as in Zaqar; a DLQ that sources name only with
    `?force=true` (409 naming them otherwise)."""
    ctx.engine.delete_queue(ctx.project, ctx.queue, force=ctx.bool_param("force"))
    return Response(status_code=204)


def queue_stats(ctx: Ctx) -> Response:
    st = ctx.engine.stats(ctx.project, ctx.queue)
    now = ctx.now()
    messages: dict[str, Any] = {
        "free": st.free,
        "claimed": st.claimed,
        "delayed": st.delayed,
        "total": st.total,
    }
    if st.total:
        messages["oldest"] = message_brief(st.oldest, now)
        messages["newest"] = message_brief(st.newest, now)
    return JSONResponse(
        {
            "messages": messages,
            "dead_letter": {
                "dead_lettered": st.dead_lettered,
                "expired_dropped": st.expired_dropped,
                "dead_letters_expired": st.dead_letters_expired,
                "acknowledged": st.acknowledged,
                "by_source": st.by_source,
                "policy_active": st.policy_active,
                "dropped": st.dropped,
                "dlq_full": st.dlq_full,
                # The queue's DLQ was deleted: its policy is inactive until the DLQ is back.
                "dlq_missing": st.policy_active is False,
            },
        }
    )


# What a purge may empty, all by default.
PURGE_KINDS = ("messages", "subscriptions")


def purge_queue(ctx: Ctx) -> Response:
    doc = ctx.json_object()
    kinds = doc.get("resource_types", list(PURGE_KINDS))
    if not isinstance(kinds, list) or not all(k in PURGE_KINDS for k in kinds):
        raise bad_request('resource_types must list "messages" and/or "subscriptions".')
    ctx.engine.get_queue(ctx.project, ctx.queue)
    if "messages" in kinds:
        ctx.engine.purge(ctx.project, ctx.queue, force=ctx.bool_param("force"))
    if "subscriptions" in kinds:
        ctx.engine.subscriptions.purge(ctx.project, ctx.queue)
    return Response(status_code=204)
