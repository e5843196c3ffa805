"""Zaqar-face handlers for queue templates: list, create or replace, get, change, delete."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from starlette.responses import Response

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.errors import bad_request
from deadletter.api.zaqar.metadata import retry_policy
from deadletter.api.zaqar.parse import known_fields
from deadletter.api.zaqar.serialize import next_link
from deadletter.domain import errors
from deadletter.domain.limits import TEMPLATE_PAGE
from deadletter.domain.templates import QueueTemplate, TemplateSettings

# The keys of a template document besides its pattern: TemplateSettings' fields.
SETTINGS_KEYS = frozenset(TemplateSettings().to_dict())
FIELDS = SETTINGS_KEYS | {"pattern"}


def to_doc(t: QueueTemplate) -> dict[str, Any]:
    return {
        "name": t.name,
        "href": f"/v2/templates/{t.name}",
        "pattern": t.pattern,
        **t.settings.to_dict(),
        "created_at": t.created_at,
        "updated_at": t.updated_at,
    }


def _settings(doc: dict[str, Any], base: TemplateSettings) -> TemplateSettings:
    """`base` with the settings `doc` names (null clears one); types are checked here, ranges
    by the engine."""
    known_fields(doc, FIELDS, "template field")
    values = {**base.to_dict(), **{k: v for k, v in doc.items() if k in SETTINGS_KEYS}}
    policy = retry_policy(_RETRY, values.pop(_RETRY), None)
    for key, value in values.items():
        wanted = str if key == "dlq" else bool if key in _FLAGS else int
        ok = value is None or (
            isinstance(value, wanted) and (wanted is bool or not isinstance(value, bool))
        )
        if not ok:
            raise bad_request(f"Template key {key} must be {_NAMES[wanted]} or null.")
    return replace(TemplateSettings.from_dict(values), retry_policy=policy)


_RETRY = "retry_policy"
_FLAGS = frozenset({"on_expiry", "respect_ttl", "dead_letter_eligible"})
_NAMES = {str: "a queue name", bool: "true or false", int: "an integer"}


def _pattern(doc: dict[str, Any]) -> str:
    pattern = doc.get("pattern")
    if not isinstance(pattern, str):
        raise bad_request('A template needs a "pattern": a glob over queue names.')
    return pattern


def list_templates(ctx: Ctx) -> Response:
    """One page of the project's templates by name, after `?marker`; the default page holds
    every template a project may have, so a client that does not page sees them all."""
    limit = ctx.int_param("limit", TEMPLATE_PAGE, 1, TEMPLATE_PAGE)
    marker = ctx.params.get("marker") or None
    found = ctx.engine.templates.page(ctx.project, after=marker, limit=limit)
    full = len(found) == limit
    links = next_link("/v2/templates", {"marker": found[-1].name, "limit": limit}) if full else []
    return JSONResponse({"templates": [to_doc(t) for t in found], "links": links})


def put_template(ctx: Ctx) -> Response:
    """Create the template, or replace it whole (keys left out are cleared)."""
    name = ctx.path["template"]
    doc = ctx.json_object(empty_ok=False)
    pattern, settings = _pattern(doc), _settings(doc, TemplateSettings())
    try:
        created = ctx.engine.templates.create(ctx.project, name, pattern=pattern, settings=settings)
    except errors.TemplateAlreadyExists:
        changed = ctx.engine.templates.change(
            ctx.project, name, change=lambda old: replace(old, pattern=pattern, settings=settings)
        )
        return JSONResponse(to_doc(changed))
    return JSONResponse(
        to_doc(created), status_code=201, headers={"Location": f"/v2/templates/{name}"}
    )


def get_template(ctx: Ctx) -> Response:
    return JSONResponse(to_doc(ctx.engine.templates.get(ctx.project, ctx.path["template"])))


def patch_template(ctx: Ctx) -> Response:
    """Change the keys the body names (a JSON merge patch: null clears a setting)."""
    doc = ctx.json_object(empty_ok=False)

    def change(old: QueueTemplate) -> QueueTemplate:
        pattern = _pattern(doc) if "pattern" in doc else old.pattern
        return replace(old, pattern=pattern, settings=_settings(doc, old.settings))

    updated = ctx.engine.templates.change(ctx.project, ctx.path["template"], change=change)
    return JSONResponse(to_doc(updated))


def delete_template(ctx: Ctx) -> Response:
    ctx.engine.templates.delete(ctx.project, ctx.path["template"])
    return Response(status_code=204)
