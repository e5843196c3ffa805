"""Zaqar claim handlers: claim messages, get, renew and release a claim."""

from __future__ import annotations

import contextlib
from typing import Any

from starlette.responses import Response

from deadletter.api.auth import forbidden
from deadletter.api.json_response import JSONResponse, LateJSONResponse
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.parse import PAGE_LIMIT, acknowledgement, claim_times, tag_param
from deadletter.auth.roles import Action
from deadletter.domain import errors
from deadletter.domain.model import Claim

DEFAULT_GRACE = 60


def create_claim(ctx: Ctx) -> Response:
    limit = ctx.int_param("limit", 10, 1, PAGE_LIMIT)
    doc = ctx.json_object()
    ttl, grace = claim_times(doc, None, DEFAULT_GRACE)
    done = acknowledgement(doc)
    if done is not None and not ctx.may(Action.MESSAGE_ACK):
        # Acknowledging deletes: the right to claim does not carry it (nor a signed URL).
        raise forbidden("This credential may not acknowledge messages (message:ack).")
    tag = tag_param(ctx)
    if done is None:
        try:
            claim = ctx.engine.claim(
                ctx.project, ctx.queue, limit=limit, ttl=ttl, grace=grace, tag=tag
            )
        except errors.QueueNotFound:
            return Response(status_code=204)
        if not claim.messages:
            return Response(status_code=204)
        return _claimed(ctx, claim, {})
    done_claim, ids = done
    acknowledged, claim = ctx.engine.acknowledge_and_claim(
        ctx.project,
        ctx.queue,
        done_claim=done_claim,
        done=ids,
        limit=limit,
        ttl=ttl,
        grace=grace,
        tag=tag,
    )
    # The answer says what was acknowledged even when nothing more is claimed.
    return _claimed(ctx, claim, {"acknowledged": acknowledged})


def _claimed(ctx: Ctx, claim: Claim, extra: dict[str, Any]) -> Response:
    if not claim.messages:
        return JSONResponse({"messages": [], **extra})
    now = ctx.now()
    return LateJSONResponse(
        lambda: {"messages": [ctx.message(m, now, claim.id) for m in claim.messages], **extra},
        status_code=201,
        headers={"Location": f"/v2/queues/{ctx.queue}/claims/{claim.id}"},
    )


def get_claim(ctx: Ctx) -> Response:
    claim_id = ctx.path["claim_id"]
    claim = ctx.engine.get_claim(ctx.project, ctx.queue, claim_id=claim_id, tag=tag_param(ctx))
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
        ttl = ctx.engine.get_claim(ctx.project, ctx.queue, claim_id=claim_id, tag=tag).ttl
    ctx.engine.renew_claim(ctx.project, ctx.queue, claim_id=claim_id, ttl=ttl, grace=grace, tag=tag)
    return Response(status_code=204)


def release_claim(ctx: Ctx) -> Response:
    tag = tag_param(ctx)
    with contextlib.suppress(errors.NotFound):
        ctx.engine.release_claim(ctx.project, ctx.queue, claim_id=ctx.path["claim_id"], tag=tag)
    return Response(status_code=204)
