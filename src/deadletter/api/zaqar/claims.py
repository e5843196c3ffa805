"""Zaqar claim handlers: claim messages, get, renew and release a claim."""

from __future__ import annotations

import contextlib

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.parse import PAGE_LIMIT, claim_times, tag_param
from deadletter.domain import errors

DEFAULT_GRACE = 60


def create_claim(ctx: Ctx) -> Response:
    limit = ctx.int_param("limit", 10, 1, PAGE_LIMIT)
    ttl, grace = claim_times(ctx.json_object(), None, DEFAULT_GRACE)
    tag = tag_param(ctx)
    try:
        claim = ctx.engine.claim(ctx.project, ctx.queue, limit, ttl=ttl, grace=grace, tag=tag)
    except errors.QueueNotFound:
        return Response(status_code=204)
    if not claim.messages:
        return Response(status_code=204)
    now = ctx.now()
    return JSONResponse(
        {"messages": [ctx.message(m, now, claim.id) for m in claim.messages]},
        status_code=201,
        headers={"Location": f"/v2/queues/{ctx.queue}/claims/{claim.id}"},
    )


def get_claim(ctx: Ctx) -> Response:
    claim_id = ctx.path["claim_id"]
    claim = ctx.engine.get_claim(ctx.project, ctx.queue, claim_id, tag_param(ctx))
    now = ctx.now()
    return JSONResponse(
        {
            "age": max(0, int(now - claim.created_at)),
            "ttl": claim.ttl,
            "grace": claim.grace,
            "href": f"/v2/queues/{ctx.queue}/claims/{claim_id}",
            "messages": [ctx.message(m, now, claim_id) for m in claim.messages],
        }
    )


def renew_claim(ctx: Ctx) -> Response:
    claim_id = ctx.path["claim_id"]
    ttl, grace = claim_times(ctx.json_object(), None, None)
    tag = tag_param(ctx)
    if ttl is None:
        ttl = ctx.engine.get_claim(ctx.project, ctx.queue, claim_id, tag).ttl
    ctx.engine.renew_claim(ctx.project, ctx.queue, claim_id, ttl, grace, tag)
    return Response(status_code=204)


def release_claim(ctx: Ctx) -> Response:
    tag = tag_param(ctx)
    with contextlib.suppress(errors.NotFound):
        ctx.engine.release_claim(ctx.project, ctx.queue, ctx.path["claim_id"], tag)
    return Response(status_code=204)
