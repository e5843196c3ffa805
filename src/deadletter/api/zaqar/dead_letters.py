"""The dead-letter extensions: dead-letter and release (nack) claimed messages, browse a DLQ,
its source queues, redrive tasks, and the failure patterns the analysis stores."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from starlette.responses import Response

from deadletter.api.auth import token_credential
from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.errors import ZaqarError, bad_request, out_of_range
from deadletter.api.zaqar.parse import (
    canary_value,
    consumer_reason,
    error_value,
    is_int,
    is_int_in,
    known_fields,
    optional_text,
    rate_value,
    redrive_ids,
    required_claim_id,
    tag_param,
    text,
    time_value,
)
from deadletter.api.zaqar.serialize import task_href, task_json
from deadletter.auth.roles import Action
from deadletter.domain import filters, routing
from deadletter.domain import settings as declared
from deadletter.domain.model import MAX_PATTERNS, MAX_PATTERNS_BYTES, DeadLetterFilter
from deadletter.domain.patterns import Assignment
from deadletter.domain.redrive import MessagePatch, PatchKind
from deadletter.engine import is_signed_url

MAX_DEAD_LETTER_BATCH = 100
# One micro-batch of pattern assignments (a streaming sink's batch) and its fields.
MAX_ASSIGNMENTS = 10_000
MAX_WRITER_ID = 200
MAX_ID = 256
MAX_TEMPLATE = 4096
MAX_BATCH_ID = 2**63 - 1
ASSIGNMENT_KEYS = frozenset(
    ("message_id", "pattern_id", "template", "signature", "dead_lettered_at")
)


def dead_letter_message(ctx: Ctx) -> Response:
    claim_id = required_claim_id(ctx)
    doc = ctx.json_object()
    moved = ctx.engine.dead_letter(
        ctx.project,
        ctx.queue,
        held=[(ctx.path["message_id"], claim_id)],
        description=consumer_reason(doc),
        error=error_value(doc),
        tag=tag_param(ctx),
    )
    return JSONResponse({"message": ctx.message(moved[0], ctx.now())})


def dead_letter_batch(ctx: Ctx) -> Response:
    doc = ctx.json_object(empty_ok=False)
    items = doc.get("messages")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_DEAD_LETTER_BATCH:
        raise bad_request(
            f'"messages" must list 1 to {MAX_DEAD_LETTER_BATCH} {{"id", "claim_id"}}.'
        )
    held: dict[tuple[str, str], None] = {}  # a pair listed twice is moved (and counted) once
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise bad_request('Each entry needs an "id" and a "claim_id".')
        known_fields(item, ("id", "claim_id"), "message field")
        if not isinstance(item.get("claim_id"), str) or not item["claim_id"]:
            raise ZaqarError(403, "Claim required", f"Message {item['id']!r} needs a claim_id.")
        held[(text("id", item["id"]), text("claim_id", item["claim_id"]))] = None
    moved = ctx.engine.dead_letter(
        ctx.project,
        ctx.queue,
        held=list(held),
        description=consumer_reason(doc),
        error=error_value(doc),
        tag=tag_param(ctx),
    )
    now = ctx.now()
    return JSONResponse({"messages": [ctx.message(m, now) for m in moved]})


def release_message(ctx: Ctx) -> Response:
    claim_id = required_claim_id(ctx)
    doc = ctx.json_object()
    # Without a delay the queue's retry policy says when the message is visible again.
    delay = doc.get("delay")
    if delay is not None and not is_int(delay):  # its range is the engine's (a claim TTL's)
        low, high = declared.CLAIM_TTL.low, declared.CLAIM_TTL.high
        raise out_of_range("delay", low, high, delay, " seconds")
    requeue = doc.get("requeue", True)
    if not isinstance(requeue, bool):
        raise bad_request("requeue must be true or false.")
    message_id, tag = ctx.path["message_id"], tag_param(ctx)
    ctx.engine.release_message(
        ctx.project,
        ctx.queue,
        message_id=message_id,
        claim_id=claim_id,
        delay=delay,
        tag=tag,
        requeue=requeue,
    )
    return Response(status_code=204)


def query_filter(ctx: Ctx) -> DeadLetterFilter:
    """The filter language's query parameters (`domain/filters.py`), `attribute` repeatable."""
    given = ctx.request.query_params
    return filters.parse({k: given.getlist(k) for k in filters.FILTER_KEYS if k in given})


def list_dead_letters(ctx: Ctx) -> Response:
    limit = ctx.int_param("limit", 100, 1, 1000)
    marker = ctx.int_param("marker", 0, 0, 2**63 - 1)
    where = query_filter(ctx)
    found = ctx.engine.list_dead_letters(
        ctx.project, ctx.queue, where=where, after_seq=marker, limit=limit
    )
    now = ctx.now()
    links: list[dict[str, str]] = []
    if len(found) == limit:
        params = [(k, v) for k, v in ctx.request.query_params.multi_items()
                  if k not in ("marker", "limit") and v]  # fmt: skip
        links = [{"rel": "next", "href": f"/v2/queues/{ctx.queue}/dead_letters?"
                  + urlencode([*params, ("marker", found[-1].seq), ("limit", limit)])}]  # fmt: skip
    # Each dead letter's `marker` is its place in the DLQ's numbering: a reader that keeps the
    # last one it took (a streaming query's offset) goes on after it with `?marker=`.
    messages = [{**ctx.message(m, now), "marker": m.seq} for m in found]
    return JSONResponse({"messages": messages, "links": links})


def count_dead_letters(ctx: Ctx) -> Response:
    """The preview of a filter: how many dead letters it selects now."""
    count = ctx.engine.count_dead_letters(ctx.project, ctx.queue, where=query_filter(ctx))
    return JSONResponse({"count": count})


def purge_dead_letters(ctx: Ctx) -> Response:
    purged = ctx.engine.purge_dead_letters(ctx.project, ctx.queue, where=query_filter(ctx))
    return JSONResponse({"purged": purged})


MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def edit_dead_letter(ctx: Ctx) -> Response:
    """A dead letter's body or attributes patched where it is, kept in its history; with
    `?redrive=true`, then sent back as a one-message redrive task."""
    content_type = ctx.request.headers.get("content-type", "").split(";")[0].strip().lower()
    kinds = {MERGE_PATCH: PatchKind.MERGE, JSON_PATCH: PatchKind.JSON}
    if content_type not in kinds:
        raise ZaqarError(
            415,
            "Unsupported media type",
            f"An edit needs Content-Type: {MERGE_PATCH} (RFC 7396) or {JSON_PATCH} (RFC 6902).",
        )
    then_redrive = ctx.bool_param("redrive")
    if then_redrive and not ctx.may(Action.REDRIVE_START):
        raise ZaqarError(403, "Forbidden", "Redriving the edited dead letter needs redrive:start.")
    patch = MessagePatch(kinds[content_type], ctx.json())
    edited, task = ctx.engine.edit_dead_letter(
        ctx.project,
        ctx.queue,
        ctx.path["message_id"],
        patch=patch,
        by=actor(ctx),
        redrive_it=then_redrive,
    )
    out: dict[str, Any] = {"message": ctx.message(edited, ctx.now())}
    if task is not None:
        out["redrive"] = task_json(task)
    return JSONResponse(out)


def actor(ctx: Ctx) -> dict[str, Any]:
    """Who asks, as an edit's history keeps it: the project, and the credential's key id
    (none with authentication off, or through a signed URL)."""
    authority = ctx.options.authority if ctx.options else None
    credential = None
    if authority is not None and not is_signed_url(ctx.request.headers):
        credential = token_credential(authority, ctx.request.headers).key_id
    return {"project": ctx.project, "credential": credential}


def dead_letter_sources(ctx: Ctx) -> Response:
    sources = ctx.engine.dead_letter_sources(ctx.project, ctx.queue)
    out = []
    for q in sources:
        # What names this DLQ: the source's policy, a route by reason, a tag's own policy.
        via = [t for t in routing.targets(q.settings) if t.name == ctx.queue]
        policy = q.settings.dead_letter
        out.append(
            {
                "name": q.name,
                "href": f"/v2/queues/{q.name}",
                "max_claim_count": policy.max_claims if policy else None,
                "active": any(t.active for t in via),
                "via": [
                    {"kind": t.kind, **({"key": t.key} if t.key is not None else {})} for t in via
                ],
            }
        )
    return JSONResponse({"sources": out})


def start_redrive(ctx: Ctx) -> Response:
    doc = ctx.json_object()
    destination = optional_text(doc, "destination")
    ids = redrive_ids(doc)
    rate = rate_value(doc.get("rate"))
    where = filters.from_json(doc)
    if where.pattern_id is not None and ids is not None:
        raise bad_request("Give message_ids or pattern_id, not both.")
    where = replace(where, message_ids=ids)
    dry_run = doc.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise bad_request("dry_run must be true or false.")
    transform = None
    if doc.get("transform") is not None:
        transform = MessagePatch(PatchKind.MERGE, doc["transform"], actor(ctx))
    canary = canary_value(doc, where.pattern_id)
    if dry_run:
        # What the task would select, counted now; nothing is written.
        count = ctx.engine.count_dead_letters(ctx.project, ctx.queue, where=where)
        return JSONResponse({"dry_run": True, "to_move": count})
    task = ctx.engine.start_redrive(
        ctx.project,
        ctx.queue,
        destination=destination,
        where=where,
        rate=rate,
        canary=canary,
        transform=transform,
    )
    return JSONResponse(
        task_json(task, where.pattern_id), status_code=201, headers={"Location": task_href(task)}
    )


def list_redrives(ctx: Ctx) -> Response:
    ctx.engine.get_queue(ctx.project, ctx.queue)
    tasks = ctx.engine.list_tasks(ctx.project, ctx.queue)
    return JSONResponse({"redrives": [task_json(t) for t in tasks]})


def get_redrive(ctx: Ctx) -> Response:
    """One task, and how the group it sent back fared (`follow`)."""
    task_id = ctx.path["task_id"]
    task = ctx.engine.get_task(ctx.project, ctx.queue, task_id=task_id)
    follow = ctx.engine.follow_redrive(ctx.project, ctx.queue, task_id=task_id)
    fared = {"redriven": follow.redriven, "came_back_dead": follow.came_back_dead,
             "still_out": follow.still_out}  # fmt: skip
    return JSONResponse({**task_json(task), "follow": fared})


def cancel_redrive(ctx: Ctx) -> Response:
    task = ctx.engine.cancel_redrive(ctx.project, ctx.queue, task_id=ctx.path["task_id"])
    return JSONResponse(task_json(task), status_code=202)


def resume_redrive(ctx: Ctx) -> Response:
    task = ctx.engine.resume_redrive(ctx.project, ctx.queue, task_id=ctx.path["task_id"])
    return JSONResponse(task_json(task), status_code=202)


def put_patterns(ctx: Ctx) -> Response:
    doc = ctx.json_object(empty_ok=False)
    patterns = doc.get("patterns")
    if not isinstance(patterns, list) or not all(
        isinstance(p, dict) and isinstance(p.get("id"), str) for p in patterns
    ):
        raise bad_request('The body must be {"patterns": [{"id": ..., ...}]}.')
    if len(patterns) > MAX_PATTERNS:
        raise bad_request(f"A queue may store at most {MAX_PATTERNS} patterns.")
    if len(ctx.body) > MAX_PATTERNS_BYTES:
        raise bad_request(f"Patterns may not take more than {MAX_PATTERNS_BYTES} bytes.")
    for p in patterns:
        text("a pattern id", p["id"])
    ctx.engine.save_patterns(ctx.project, ctx.queue, found=patterns)
    return Response(status_code=204)


def get_patterns(ctx: Ctx) -> Response:
    return JSONResponse({"patterns": ctx.engine.get_patterns(ctx.project, ctx.queue)})


def split_pattern(ctx: Ctx) -> Response:
    """A stored pattern replaced by one pattern per value its members hold at a position."""
    doc = ctx.json_object(empty_ok=False)
    position = doc.get("position")
    if not isinstance(position, int) or not is_int_in(position, 1, MAX_TEMPLATE):
        raise bad_request(f'"position" must be an integer from 1 to {MAX_TEMPLATE}.')
    dry_run = doc.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise bad_request("dry_run must be true or false.")
    done = ctx.engine.split_pattern(
        ctx.project, ctx.queue, ctx.path["pattern_id"], position=position, dry_run=dry_run
    )
    made = [
        {
            "id": p["id"],
            "template": p["template"],
            "count": p["count"],
            "value": p["split"]["value"],
        }
        for p in done.patterns
    ]
    return JSONResponse(
        {
            "pattern_id": done.pattern_id,
            "position": done.position,
            "patterns": made,
            "unread": done.unread,
            **({"dry_run": True} if dry_run else {}),
        }
    )


def merge_assignments(ctx: Ctx) -> Response:
    """One writer's micro-batch merged into the stored patterns, once per (writer, batch)."""
    if len(ctx.body) > MAX_PATTERNS_BYTES:
        raise bad_request(f"A batch may not take more than {MAX_PATTERNS_BYTES} bytes.")
    doc = ctx.json_object(empty_ok=False)
    writer = doc.get("writer")
    if not isinstance(writer, str) or not 1 <= len(writer) <= MAX_WRITER_ID:
        raise bad_request(f'"writer" must be a string of 1 to {MAX_WRITER_ID} characters.')
    batch = doc.get("batch")
    if not isinstance(batch, int) or not is_int_in(batch, 0, MAX_BATCH_ID):
        raise bad_request(f'"batch" must be an integer from 0 to {MAX_BATCH_ID}.')
    items = doc.get("assignments")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_ASSIGNMENTS:
        raise bad_request(f'"assignments" must list 1 to {MAX_ASSIGNMENTS} assignments.')
    assigned = [_assignment(i, item) for i, item in enumerate(items)]
    merged = ctx.engine.merge_assignments(
        ctx.project,
        ctx.queue,
        writer=text("writer", writer),
        batch=batch,
        assigned=assigned,
        limit=MAX_PATTERNS,
        max_bytes=MAX_PATTERNS_BYTES,
    )
    return JSONResponse(
        {
            "merged": merged.merged,
            "batch": merged.last_batch,
            "patterns": merged.patterns,
            "alerts": [{"kind": k, "pattern_id": pid} for k, pid in merged.alerts],
        }
    )


def _assignment(i: int, item: object) -> Assignment:
    where = f"assignments[{i}]"
    if not isinstance(item, dict):
        raise bad_request(f"{where} must be an object.")
    known_fields(item, ASSIGNMENT_KEYS, f"field of {where}:")
    ids = []
    for key in ("message_id", "pattern_id"):
        value = item.get(key)
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID:
            raise bad_request(f"{where}.{key} must be a string of 1 to {MAX_ID} characters.")
        ids.append(text(f"{where}.{key}", value))
    texts: list[str | None] = []
    for key in ("template", "signature"):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > MAX_TEMPLATE):
            raise bad_request(f"{where}.{key} must be a string of at most {MAX_TEMPLATE} chars.")
        texts.append(None if value is None else text(f"{where}.{key}", value))
    at = time_value(f"{where}.dead_lettered_at", item.get("dead_lettered_at"))
    return Assignment(ids[0], ids[1], texts[0], texts[1], at)
