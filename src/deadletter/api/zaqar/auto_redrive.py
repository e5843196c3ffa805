"""A DLQ's automatic redrive policy: set, read, stop, resume, delete
(`/v2/queues/{dlq}/dead_letters/auto_redrive`)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.errors import bad_request
from deadletter.api.zaqar.parse import canary_value, known_fields, rate_value
from deadletter.api.zaqar.serialize import iso
from deadletter.domain import errors, filters
from deadletter.domain.auto_redrive import (
    MAX_INTERVAL,
    MAX_ROUNDS,
    MIN_INTERVAL,
    AutoRedrive,
    AutoRedriveSpec,
    PolicyState,
)
from deadletter.domain.model import DeadLetterFilter

# The body's fields (the route's row reads them): the canary's as a redrive takes them,
# but for its seed (each round draws its own sample).
FIELDS = frozenset(
    {"filter", "interval", "max_rounds", "canary", "watch", "max_redeath", "force", "rate",
     "enabled"}
)  # fmt: skip


def href(dlq: str) -> str:
    return f"/v2/queues/{dlq}/dead_letters/auto_redrive"


def put_auto_redrive(ctx: Ctx) -> Response:
    """Set the DLQ's policy whole: 201 when new, 200 when it replaced one."""
    doc = ctx.json_object(empty_ok=False)
    spec = AutoRedriveSpec(
        filter=filter_value(doc.get("filter")),
        interval=_integer(doc, "interval", MIN_INTERVAL, MAX_INTERVAL, " seconds"),
        max_rounds=_integer(doc, "max_rounds", 1, MAX_ROUNDS, ""),
        canary=canary_value(doc, None),
        rate=rate_value(doc.get("rate")),
    )
    enabled = doc.get("enabled")
    if "enabled" in doc and not isinstance(enabled, bool):
        raise bad_request("enabled must be true or false.")
    policy, created = ctx.engine.put_auto_redrive(
        ctx.project, ctx.queue, spec=spec, enabled=enabled
    )
    if created:
        return JSONResponse(
            policy_json(policy), status_code=201, headers={"Location": href(ctx.queue)}
        )
    return JSONResponse(policy_json(policy))


def filter_value(value: Any) -> DeadLetterFilter:
    """The policy's filter: an object of the filter language's fields, `{}` for the whole
    DLQ (which must be said); a field of no value is refused rather than read as no filter."""
    if not isinstance(value, dict):
        raise bad_request(
            "filter must be an object of the filter language's fields ({} selects the whole"
            " dead-letter queue)."
        )
    known_fields(value, filters.FILTER_KEYS, "filter")
    try:
        return filters.from_json(value)
    except errors.InvalidFilter as exc:  # said of the policy's `filter`
        raise errors.InvalidFilter(f"filter: {exc}") from exc


def _integer(doc: dict[str, Any], key: str, low: int, high: int, unit: str) -> int:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise bad_request(f"{key} must be an integer from {low} to {high}{unit}.")
    return value


def get_auto_redrive(ctx: Ctx) -> Response:
    return JSONResponse(policy_json(ctx.engine.get_auto_redrive(ctx.project, ctx.queue)))


def delete_auto_redrive(ctx: Ctx) -> Response:
    """204 even when there was none (the queue must exist); the round in flight is cancelled."""
    ctx.engine.delete_auto_redrive(ctx.project, ctx.queue)
    return Response(status_code=204)


def stop_auto_redrive(ctx: Ctx) -> Response:
    return JSONResponse(policy_json(ctx.engine.stop_auto_redrive(ctx.project, ctx.queue)))


def resume_auto_redrive(ctx: Ctx) -> Response:
    return JSONResponse(policy_json(ctx.engine.resume_auto_redrive(ctx.project, ctx.queue)))


def policy_json(p: AutoRedrive) -> dict[str, Any]:
    spec, last = p.spec, p.last_round
    canary = None
    if spec.canary is not None:
        c = spec.canary
        canary = {
            "size": f"{c.percent:g}%" if c.percent is not None else c.count,
            "watch": c.watch,
            "max_redeath": c.max_redeath,
            "force": c.force,
        }
    return {
        "dlq": p.dlq,
        "href": href(p.dlq),
        "filter": filter_json(spec.filter),
        "interval": spec.interval,
        "max_rounds": spec.max_rounds,
        "canary": canary,
        "rate": spec.rate,
        "state": p.state.value,
        "reason": p.reason,
        "rounds": p.rounds,
        "moved": p.moved,
        "exhausted": p.exhausted,
        # When the next round is due: only an active policy has one.
        "next_round_at": iso(p.next_due) if p.state is PolicyState.ACTIVE else None,
        "last_round": None
        if last is None
        else {
            "at": iso(last.at),
            "task_id": last.task_id,
            "task_href": f"/v2/queues/{p.dlq}/redrives/{last.task_id}" if last.task_id else None,
            "outcome": last.outcome.value,
            "eligible": last.eligible,
            "kept": last.kept,
            "moved": last.moved,
            "reason": last.reason,
        },
        "created_at": iso(p.created_at),
        "updated_at": iso(p.updated_at),
    }


def filter_json(f: DeadLetterFilter) -> dict[str, Any]:
    """The filter in the language's own names, as it was given (times as ISO 8601, ages in
    seconds); only the fields set."""
    out: dict[str, Any] = {
        "source_queue": f.source_queue,
        "source_tag": f.source_tag,
        "reason": f.reason.value if f.reason is not None else None,
        "since": iso(f.since) if f.since is not None else None,
        "until": iso(f.until) if f.until is not None else None,
        "older_than": f.older_than,
        "newer_than": f.newer_than,
        "pattern_id": f.pattern_id,
        "error_class": f.error_class,
        "error_contains": f.error_contains,
        "error_matches": f.error_matches,
        "attribute": [n if v is None else f"{n}={v}" for n, v in f.attributes] or None,
        "body": f.body,
        "min_deaths": f.min_deaths,
        "max_deaths": f.max_deaths,
        "redriven_by": f.redriven_by,
        "filter": f.saved,
    }
    return {k: v for k, v in out.items() if v is not None}
