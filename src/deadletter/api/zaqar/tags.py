"""Zaqar extension: consumer tags as a resource of a queue (create, list, show, delete).

The `tag` selector of claims and message operations is read by those handlers
(`parse.tag_param`); docs/api.md describes both beside Zaqar's API.
"""

from __future__ import annotations

import contextlib
from typing import Any

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.errors import bad_request
from deadletter.api.zaqar.parse import known_fields, optional_text, text, time_value
from deadletter.api.zaqar.serialize import iso
from deadletter.domain import errors
from deadletter.engine import TagInfo


def tag_json(queue: str, info: TagInfo) -> dict[str, Any]:
    t, c = info.tag, info.counts
    return {
        "name": t.name,
        "href": f"/v2/queues/{queue}/tags/{t.name}",
        "created": iso(t.created_at),
        "start": iso(t.start_at) if t.start_at else None,
        "filter": (
            {"attribute": t.filter_attribute, "value": t.filter_value}
            if t.filter_attribute is not None
            else None
        ),
        "messages": {
            "ready": c.ready,
            "claimed": c.claimed,
            "delivered": c.acknowledged,
            "dead_lettered": c.dead_lettered,
        },
    }


def create_tag(ctx: Ctx) -> Response:
    doc = ctx.json_object()
    start = time_value("start", doc.get("start"))
    attribute = value = None
    where = doc.get("filter")
    if where is not None:
        if isinstance(where, dict):
            known_fields(where, ("attribute", "value"), "filter field")
        if not isinstance(where, dict) or set(where) != {"attribute", "value"}:
            raise bad_request('filter must be {"attribute": <name>, "value": <string>}.')
        attribute, value = optional_text(where, "attribute"), optional_text(where, "value")
    name = text("tag", ctx.path["tag"])
    ctx.engine.create_tag(
        ctx.project,
        ctx.queue,
        name=name,
        start_at=start,
        filter_attribute=attribute,
        filter_value=value,
    )
    info = ctx.engine.get_tag(ctx.project, ctx.queue, name=name)
    return JSONResponse(
        tag_json(ctx.queue, info),
        status_code=201,
        headers={"Location": f"/v2/queues/{ctx.queue}/tags/{name}"},
    )


def list_tags(ctx: Ctx) -> Response:
    infos = ctx.engine.list_tags(ctx.project, ctx.queue)
    return JSONResponse({"tags": [tag_json(ctx.queue, i) for i in infos]})


def get_tag(ctx: Ctx) -> Response:
    info = ctx.engine.get_tag(ctx.project, ctx.queue, name=text("tag", ctx.path["tag"]))
    return JSONResponse(tag_json(ctx.queue, info))


def delete_tag(ctx: Ctx) -> Response:
    # Idempotent, as deleting a queue is in Zaqar.
    with contextlib.suppress(errors.TagNotFound):
        ctx.engine.delete_tag(ctx.project, ctx.queue, name=text("tag", ctx.path["tag"]))
    return Response(status_code=204)
