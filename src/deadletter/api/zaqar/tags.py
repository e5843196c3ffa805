"""Zaqar extension: consumer tags as a resource of a queue (create, list, show, change the
policy, delete).

The `tag` selector of claims and message operations is read by those handlers
(`parse.tag_param`); docs/api.md describes both beside Zaqar's API.
"""

from __future__ import annotations

import contextlib
from typing import Any

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar import metadata
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.errors import bad_request
from deadletter.api.zaqar.parse import known_fields, optional_text, text, time_value
from deadletter.api.zaqar.serialize import iso
from deadletter.domain import errors
from deadletter.domain.policies import GroupPolicy
from deadletter.engine import TagInfo

# A tag's own policy: each field unset (or null) takes the queue's.
POLICY_FIELDS = ("max_claims", "dead_letter_queue", "retry_policy")
CREATE_FIELDS = frozenset({"start", "filter", *POLICY_FIELDS})


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
        **policy_json(info),
    }


def policy_json(info: TagInfo) -> dict[str, Any]:
    """The tag's own policy fields (null: the queue's), and the policy it dead-letters by."""
    own, effective = info.policy or GroupPolicy(), info.effective
    return {
        "max_claims": own.max_claims,
        "dead_letter_queue": own.dead_letter_queue,
        "retry_policy": own.retry_policy.to_dict() if own.retry_policy else None,
        "dead_letter": (
            {
                "queue": effective.target,
                "max_claims": effective.max_claims,
                "active": effective.active,
            }
            if effective is not None
            else None
        ),
    }


def _policy(doc: dict[str, Any], base: GroupPolicy) -> GroupPolicy:
    """`base` with the policy fields `doc` names: a value sets one, null removes it."""
    max_claims, dlq, retry = base.max_claims, base.dead_letter_queue, base.retry_policy
    if "max_claims" in doc:
        value = doc["max_claims"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise bad_request("max_claims must be an integer.")
        max_claims = value  # its range is the engine's to check
    if "dead_letter_queue" in doc:
        dlq = optional_text(doc, "dead_letter_queue")
        if dlq is not None:
            metadata.check_queue_reference(dlq)
    if "retry_policy" in doc:
        retry = metadata.retry_policy("retry_policy", doc["retry_policy"], None)
    return GroupPolicy(max_claims=max_claims, dead_letter_queue=dlq, retry_policy=retry)


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
        policy=_policy(doc, GroupPolicy()),
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


def update_tag(ctx: Ctx) -> Response:
    """Change the tag's own policy: the fields given, a null one back to the queue's."""
    doc = ctx.json_object(empty_ok=False)
    name = text("tag", ctx.path["tag"])
    ctx.engine.change_tag_policy(
        ctx.project, ctx.queue, name=name, change=lambda current: _policy(doc, current)
    )
    return JSONResponse(tag_json(ctx.queue, ctx.engine.get_tag(ctx.project, ctx.queue, name=name)))


def delete_tag(ctx: Ctx) -> Response:
    # Idempotent, as deleting a queue is in Zaqar.
    with contextlib.suppress(errors.TagNotFound):
        ctx.engine.delete_tag(ctx.project, ctx.queue, name=text("tag", ctx.path["tag"]))
    return Response(status_code=204)
