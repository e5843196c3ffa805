"""The document's paths: one operation per row of the Zaqar face's route table (`ROUTES`),
with the row's summary, statuses and request body, and the query parameters its handler
reads (its row's `reads`)."""

from __future__ import annotations

import re
from typing import Any

from deadletter.api.openapi import auto_redrive
from deadletter.api.openapi.pattern_schemas import PATTERN_SCHEMAS
from deadletter.api.openapi.schemas import FILTER_QUERY, SCHEMAS, STR, whole
from deadletter.api.zaqar.context import PATH_NAMES
from deadletter.api.zaqar.reads import FREE
from deadletter.api.zaqar.routes import ROUTES, ZaqarRoute
from deadletter.domain import names

# Errors every operation may answer with; the rest are declared by the route's row.
ERRORS = {
    "400": "Invalid request (every value is checked before anything is written)",
    "404": "No such queue, message, claim, task or path",
    "405": "Method not allowed on this path",
    "413": "Request body too large",
}

# Typed query parameters; the rest are strings.
QUERY: dict[str, dict[str, Any]] = {
    "limit": {"type": "integer", "minimum": 1, "maximum": 20},
    "pop": {"type": "integer", "minimum": 1, "maximum": 20},
    "detailed": {"type": "boolean"},
    "defaults": {"type": "boolean"},
    "with_count": {"type": "boolean"},
    "force": {"type": "boolean"},
    "echo": {"type": "boolean"},
    "include_claimed": {"type": "boolean"},
    "include_delayed": {"type": "boolean"},
    # The consumer tag an operation is for; without it, the queue's untagged consumers.
    "tag": whole(names.TAG),
    "source_tag": whole(names.TAG),
}
QUERY_BY_OP: dict[str, dict[str, dict[str, Any]]] = {
    "list_messages": {"marker": {"type": "integer", "minimum": 0}},
    "list_dead_letters": {
        "marker": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
        **FILTER_QUERY,
    },
    "count_dead_letters": FILTER_QUERY,
    "purge_dead_letters": FILTER_QUERY,
    "edit_dead_letter": {"redrive": {"type": "boolean"}},
}
PATCH_TYPE = "application/openstack-messaging-v2.0-json-patch"
# The request body's media type by its schema, where it is not JSON.
BODY_TYPES = {"Patch": PATCH_TYPE, "DeadLetterEdit": "application/merge-patch+json"}


def _json(schema: dict[str, Any], media_type: str = "application/json") -> dict[str, Any]:
    return {"content": {media_type: {"schema": schema}}}


def _responses(route: ZaqarRoute) -> dict[str, Any]:
    error = _json({"$ref": "#/components/schemas/Error"})
    out: dict[str, Any] = {}
    for code in [route.status, *route.also]:
        empty = code == "204" or (code == route.status and route.empty)
        body = {} if empty else _json({}, route.media_type)
        out[code] = {"description": "Success", **body}
    for code, what in {**ERRORS, **route.errors}.items():
        out[code] = {"description": what, **error}
    return out


def _parameters(route: ZaqarRoute) -> list[dict[str, Any]]:
    """Its path's names, each by its kind's pattern; the query parameters its handler reads;
    the Zaqar headers."""
    params: list[dict[str, Any]] = [
        {
            "name": part,
            "in": "path",
            "required": True,
            "schema": whole(PATH_NAMES[part]) if part in PATH_NAMES else STR,
        }
        for part in re.findall(r"{(\w+)}", route.path)
    ]
    typed = {**QUERY, **QUERY_BY_OP.get(route.name, {})}
    params += [{"name": q, "in": "query", "schema": typed.get(q, STR)} for q in route.reads.query]
    if route.client_id:
        uuid = {"type": "string", "format": "uuid"}
        params.append({"name": "Client-ID", "in": "header", "required": True, "schema": uuid})
        params.append({"name": "X-Project-ID", "in": "header", "schema": whole(names.PROJECT)})
    return params


def _schemas(table: list[ZaqarRoute]) -> dict[str, Any]:
    """The body schemas; one whose route declares its fields (its row's `reads`) takes no other."""
    schemas = {**SCHEMAS, **PATTERN_SCHEMAS, **auto_redrive.SCHEMAS}
    for route in table:
        fields = route.reads.body
        if route.body is not None and fields is not None and fields is not FREE:
            schemas[route.body] = {**schemas[route.body], "additionalProperties": False}
    return schemas


def operation(route: ZaqarRoute) -> dict[str, Any]:
    """The OpenAPI operation of one row."""
    op: dict[str, Any] = {
        "operationId": route.name,
        "summary": route.summary,
        "parameters": _parameters(route),
        "responses": _responses(route),
    }
    if route.body is not None:
        media_type = BODY_TYPES.get(route.body, "application/json")
        op["requestBody"] = _json({"$ref": f"#/components/schemas/{route.body}"}, media_type)
    return op


def document(table: list[ZaqarRoute] = ROUTES) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in table:
        paths.setdefault(route.path, {})[route.method.lower()] = operation(route)
    paths["/metrics"] = {
        "get": {
            "summary": "Prometheus metrics",
            "responses": {
                "200": {"description": "Text exposition format", "content": {"text/plain": {}}}
            },
        }
    }
    paths["/openapi.json"] = {
        "get": {
            "summary": "This document",
            "responses": {"200": {"description": "OpenAPI 3.1", **_json({})}},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "deadletter native API",
            "version": "2.0",
            "description": "OpenStack Zaqar v2 with dead-letter extensions.",
        },
        "paths": paths,
        "components": {"schemas": _schemas(table)},
    }
