"""Zaqar message handlers: post, list or get by ids, pop, get one, delete."""

from __future__ import annotations

import contextlib

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar import metadata as meta
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.errors import bad_request
from deadletter.api.zaqar.parse import PAGE_LIMIT, message_ids, new_message, tag_param
from deadletter.api.zaqar.serialize import message_href, next_link
from deadletter.auth.roles import Action
from deadletter.domain import errors
from deadletter.domain.model import DEFAULT_MESSAGE_SIZE, ListQuery, NewMessage


def post_messages(ctx: Ctx) -> Response:
    try:
        # The queue's limits are checked in the send's own transaction, which reads the queue.
        _, sent = ctx.engine.send_prepared(
            ctx.project,
            ctx.queue,
            prepare=lambda q: _posted(ctx, q.settings.max_message_size, q.settings.min_ttl),
            client_id=ctx.client_id,
        )
    except errors.QueueNotFound:
        # Zaqar creates a queue on its first message, from the template its name matches;
        # only a caller who may create queues creates one so.
        meta.check_queue_name(ctx.queue)  # an existing queue may have an SQS-length name
        if not ctx.may(Action.QUEUE_CREATE):
            raise errors.QueueNotFound(
                f"queue {ctx.queue!r} does not exist, and this credential may not create"
                " queues: an admin creates it first"
            ) from None
        template = ctx.engine.templates.for_queue(ctx.project, ctx.queue)
        news = _posted(ctx, DEFAULT_MESSAGE_SIZE, template.settings.min_ttl if template else None)
        with contextlib.suppress(errors.QueueAlreadyExists):
            ctx.engine.templates.create_queue(ctx.project, ctx.queue, base=meta.ZAQAR_DEFAULTS)
        sent = ctx.engine.send(ctx.project, ctx.queue, messages=news, client_id=ctx.client_id)
    ids = ",".join(m.id for m in sent)
    return JSONResponse(
        {"resources": [message_href(ctx.queue, m.id) for m in sent]},
        status_code=201,
        headers={"Location": f"/v2/queues/{ctx.queue}/messages?ids={ids}"},
    )


def _posted(ctx: Ctx, max_message_size: int, min_ttl: int | None) -> list[NewMessage]:
    """The posted messages, checked against the queue's (or its template's) limits."""
    limit = min(DEFAULT_MESSAGE_SIZE, max_message_size)
    if len(ctx.body) > limit:
        raise bad_request(f"The request body may not be larger than {limit} bytes.")
    doc = ctx.json()
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(messages, list) or not messages:
        raise bad_request('The body must be {"messages": [...]} with at least one message.')
    if len(messages) > PAGE_LIMIT:
        raise bad_request(f"A post carries at most {PAGE_LIMIT} messages, not {len(messages)}.")
    floor = meta.ttl_floor(min_ttl)
    return [new_message(m, floor) for m in messages]


def list_messages(ctx: Ctx) -> Response:
    now = ctx.now()
    if "ids" in ctx.params:
        found = ctx.engine.get_messages(ctx.project, ctx.queue, ids=message_ids(ctx))
        if not found:
            raise errors.MessageNotFound("none of the messages exist")
        return JSONResponse({"messages": [ctx.message(m, now) for m in found]})
    limit = ctx.int_param("limit", 10, 1, PAGE_LIMIT)
    marker = ctx.int_param("marker", 0, 0, 2**63 - 1)
    echo = ctx.bool_param("echo")
    include_claimed = ctx.bool_param("include_claimed")
    include_delayed = ctx.bool_param("include_delayed")
    query = ListQuery(
        after_seq=marker,
        limit=limit,
        include_claimed=include_claimed,
        include_delayed=include_delayed,
        exclude_client_id=None if echo else ctx.client_id,
    )
    try:
        found = ctx.engine.list_messages(ctx.project, ctx.queue, query=query)
    except errors.QueueNotFound:
        # Zaqar lists a queue that does not exist as an empty one.
        found = []
    links: list[dict[str, str]] = []
    if found:
        links = next_link(
            f"/v2/queues/{ctx.queue}/messages",
            {
                "marker": found[-1].seq,
                "limit": limit,
                "echo": echo,
                "include_claimed": include_claimed,
                "include_delayed": include_delayed,
            },
        )
    return JSONResponse({"messages": [ctx.message(m, now) for m in found], "links": links})


def delete_messages(ctx: Ctx) -> Response:
    if "pop" in ctx.params:
        if "ids" in ctx.params:
            raise bad_request("Give either ids or pop, not both.")
        count = ctx.int_param("pop", 1, 1, PAGE_LIMIT)
        now = ctx.now()
        try:
            popped = ctx.engine.pop(ctx.project, ctx.queue, limit=count)
        except errors.QueueNotFound:
            popped = []
        return JSONResponse({"messages": [ctx.message(m, now) for m in popped]})
    if "ids" not in ctx.params:
        raise bad_request("Give ids=<id,...> or pop=<n>.")
    with contextlib.suppress(errors.QueueNotFound):
        ctx.engine.delete_messages(ctx.project, ctx.queue, ids=message_ids(ctx))
    return Response(status_code=204)


def get_message(ctx: Ctx) -> Response:
    m = ctx.engine.get_message(ctx.project, ctx.queue, message_id=ctx.path["message_id"])
    return JSONResponse(ctx.message(m, ctx.now()))


def delete_message(ctx: Ctx) -> Response:
    # Deleting is idempotent in Zaqar: a message already gone is fine.
    tag = tag_param(ctx)
    with contextlib.suppress(errors.MessageNotFound, errors.QueueNotFound):
        ctx.engine.delete_message(
            ctx.project,
            ctx.queue,
            message_id=ctx.path["message_id"],
            claim_id=ctx.params.get("claim_id") or None,
            tag=tag,
        )
    return Response(status_code=204)
