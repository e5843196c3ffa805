"""Zaqar subscription handlers: subscribe a webhook to a queue, read, list, change, unsubscribe."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar import metadata as meta
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.errors import bad_request
from deadletter.api.zaqar.parse import PAGE_LIMIT, is_int_in, text
from deadletter.api.zaqar.serialize import next_link
from deadletter.auth.roles import Action
from deadletter.domain import errors
from deadletter.domain.subscriptions import DEFAULT_SUBSCRIPTION_TTL, Subscription

# Options are the subscriber's (post_headers, post_data...): kept whole, up to this size.
MAX_OPTIONS_BYTES = 65_536
# What a header's value reads as to whoever may read a subscription but not make one: the
# values of `post_headers` are often the subscriber's secrets (a token, a signature key).
REDACTED = "<redacted>"


def subscription_json(s: Subscription, now: float, secrets: bool = True) -> dict[str, Any]:
    """Zaqar's fields exactly: python-zaqarclient builds its objects from them. Without
    `secrets`, the values of `post_headers` are redacted (their names stay)."""
    options = s.options
    headers = options.get("post_headers")
    if not secrets and isinstance(headers, dict):
        options = {**options, "post_headers": dict.fromkeys(headers, REDACTED)}
    return {
        "id": s.id,
        "source": s.queue,
        "subscriber": s.subscriber,
        "ttl": s.ttl,
        "age": max(0, int(now - s.created_at)),
        "options": options,
        "confirmed": s.confirmed,
    }


def _sees_secrets(ctx: Ctx) -> bool:
    """Only a role that may make subscriptions sees what it would write into one."""
    return ctx.may(Action.SUBSCRIPTION_MANAGE)


def _fields(doc: dict[str, Any]) -> tuple[str | None, int | None, dict[str, Any] | None]:
    subscriber = doc.get("subscriber")
    if subscriber is not None and not isinstance(subscriber, str):
        raise bad_request("subscriber must be a string (an http:// or https:// URL).")
    ttl = doc.get("ttl")
    if ttl is not None and not is_int_in(ttl, 0, 2**63 - 1):
        raise bad_request("TTL must be an integer.")
    options = doc.get("options")
    if options is not None:
        if not isinstance(options, dict):
            raise bad_request("Options must be a dict.")
        if len(json.dumps(options)) > MAX_OPTIONS_BYTES:
            raise bad_request(f"Options may not be larger than {MAX_OPTIONS_BYTES} bytes.")
        for key in options:
            text("an option name", key)
    return (text("subscriber", subscriber) if subscriber else subscriber), ttl, options


def create_subscription(ctx: Ctx) -> Response:
    doc = ctx.json_object()
    if not doc:
        raise bad_request("No subscription to create.")
    subscriber, ttl, options = _fields(doc)
    if not subscriber:
        raise bad_request("Missing parameter subscriber in body.")
    ttl = DEFAULT_SUBSCRIPTION_TTL if ttl is None else ttl
    if ctx.engine.find_queue(ctx.project, ctx.queue) is None:
        # As a first message does, a first subscription creates the queue: only once the
        # subscription is known to be acceptable, so a refused one leaves no queue behind.
        meta.check_queue_name(ctx.queue)
        ctx.engine.subscriptions.check_new(subscriber, ttl=ttl, options=options or {})
        with contextlib.suppress(errors.QueueAlreadyExists):
            ctx.engine.create_queue(ctx.project, ctx.queue, settings=meta.ZAQAR_DEFAULTS)
    subscription, _ = ctx.engine.subscriptions.create(
        ctx.project, ctx.queue, subscriber=subscriber, ttl=ttl, options=options or {}
    )
    return JSONResponse(
        {"subscription_id": subscription.id},
        status_code=201,
        headers={"Location": f"/v2/queues/{ctx.queue}/subscriptions/{subscription.id}"},
    )


def get_subscription(ctx: Ctx) -> Response:
    found = ctx.engine.subscriptions.get(
        ctx.project, ctx.queue, subscription_id=ctx.path["subscription_id"]
    )
    return JSONResponse(subscription_json(found, ctx.now(), _sees_secrets(ctx)))


def list_subscriptions(ctx: Ctx) -> Response:
    limit = ctx.int_param("limit", 10, 1, PAGE_LIMIT)
    marker = ctx.params.get("marker") or None
    found = ctx.engine.subscriptions.list_page(ctx.project, ctx.queue, after=marker, limit=limit)
    now, secrets = ctx.now(), _sees_secrets(ctx)
    links: list[dict[str, str]] = []
    if found:
        links = next_link(
            f"/v2/queues/{ctx.queue}/subscriptions", {"marker": found[-1].id, "limit": limit}
        )
    return JSONResponse(
        {"subscriptions": [subscription_json(s, now, secrets) for s in found], "links": links}
    )


def update_subscription(ctx: Ctx) -> Response:
    doc = ctx.json_object()
    if not doc:
        raise bad_request("No subscription to update.")
    subscriber, ttl, options = _fields(doc)
    if "subscriber" in doc and not subscriber:
        raise bad_request("subscriber may not be empty.")
    ctx.engine.subscriptions.update(
        ctx.project,
        ctx.queue,
        subscription_id=ctx.path["subscription_id"],
        subscriber=subscriber,
        ttl=ttl,
        options=options,
    )
    return Response(status_code=204)


def confirm_subscription(ctx: Ctx) -> Response:
    """Zaqar's `PUT .../confirm` with `{"confirmed": true}` (or false to withdraw), as the
    subscriber does with the signed URL of its confirmation request."""
    doc = ctx.json_object()
    confirmed = doc.get("confirmed")
    if set(doc) != {"confirmed"} or not isinstance(confirmed, bool):
        raise bad_request('The body must be {"confirmed": true} or {"confirmed": false}.')
    sid = ctx.path["subscription_id"]
    ctx.engine.subscriptions.confirm(
        ctx.project, ctx.queue, subscription_id=sid, confirmed=confirmed
    )
    return Response(
        status_code=204,
        headers={"Location": f"/v2/queues/{ctx.queue}/subscriptions/{sid}/confirm"},
    )


def delete_subscription(ctx: Ctx) -> Response:
    """204 whether it existed or not, as in Zaqar."""
    ctx.engine.subscriptions.delete(
        ctx.project, ctx.queue, subscription_id=ctx.path["subscription_id"]
    )
    return Response(status_code=204)
