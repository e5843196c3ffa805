"""The OpenAPI document of the native API (Zaqar v2 plus the dead-letter extensions)."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from deadletter.api.zaqar.routes import ROUTES

# handler name -> (summary, query parameters, success status, request body schema or None)
OPERATIONS: dict[str, tuple[str, list[str], str, str | None]] = {
    "versions": ("API versions (300 Multiple Choices)", [], "300", None),
    "home": ("JSON home document", [], "200", None),
    "ping": ("Liveness check", [], "204", None),
    "health": ("Storage health", [], "200", None),
    "list_queues": ("List queues", ["marker", "limit", "detailed", "with_count"], "200", None),
    "create_queue": (
        "Create a queue with metadata (201; 204 when it exists)",
        [],
        "201",
        "Metadata",
    ),
    "get_queue": ("Queue metadata, every reserved key included", [], "200", None),
    "patch_queue": (
        "Update metadata (application/openstack-messaging-v2.0-json-patch)",
        [],
        "200",
        "Patch",
    ),
    "delete_queue": ("Delete a queue and its messages", [], "204", None),
    "queue_stats": ("Message counts and dead-letter counters", [], "200", None),
    "purge_queue": ("Delete every message of the queue", [], "204", "Purge"),
    "post_messages": ("Send messages (the queue is created if missing)", [], "201", "NewMessages"),
    "list_messages": (
        "List messages, or get some by ids",
        ["marker", "limit", "echo", "include_claimed", "include_delayed", "ids"],
        "200",
        None,
    ),
    "delete_messages": ("Delete messages by ids, or pop some", ["ids", "pop"], "204", None),
    "get_message": ("One message", [], "200", None),
    "delete_message": ("Acknowledge one message", ["claim_id"], "204", None),
    "dead_letter_message": (
        "Move one claimed message to the DLQ now (reason rejected)",
        ["claim_id"],
        "200",
        "DeadLetter",
    ),
    "release_message": ("Give one claimed message back (nack)", ["claim_id"], "204", "Release"),
    "create_claim": ("Claim messages (204 when none)", ["limit"], "201", "ClaimTimes"),
    "get_claim": ("A claim and its messages", [], "200", None),
    "renew_claim": ("Renew a claim", [], "204", "ClaimTimes"),
    "release_claim": ("Release a claim", [], "204", None),
    "dead_letter_batch": ("Move several claimed messages to the DLQ", [], "200", "DeadLetterBatch"),
    "list_dead_letters": (
        "Browse a DLQ without consuming it",
        ["source_queue", "reason", "since", "until", "marker", "limit"],
        "200",
        None,
    ),
    "dead_letter_sources": ("Queues whose dead-letter policy names this queue", [], "200", None),
    "start_redrive": ("Start a redrive task", [], "201", "Redrive"),
    "list_redrives": ("Redrive tasks of a DLQ, newest first", [], "200", None),
    "get_redrive": ("One redrive task", [], "200", None),
    "cancel_redrive": ("Cancel a running redrive task (202)", [], "202", None),
    "put_patterns": ("Store failure patterns found by the analysis", [], "204", "Patterns"),
    "get_patterns": ("Stored failure patterns", [], "200", None),
}

OBJ: dict[str, Any] = {"type": "object"}
INT: dict[str, Any] = {"type": "integer"}
STR: dict[str, Any] = {"type": "string"}
TIME: dict[str, Any] = {"type": "string", "format": "date-time"}

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "properties": {"title": STR, "description": STR},
        "required": ["title", "description"],
    },
    "Metadata": {
        "type": "object",
        "description": "User keys plus reserved keys (_default_message_ttl, _max_claim_count,"
        " _dead_letter_queue, _redrive_allow, ...).",
    },
    "Patch": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"op": {"enum": ["add", "replace", "remove"]}, "path": STR, "value": {}},
            "required": ["op", "path"],
        },
    },
    "Purge": {"type": "object", "properties": {"resource_types": {"type": "array"}}},
    "NewMessages": {
        "type": "object",
        "properties": {
            "messages": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "body": {},
                        "ttl": INT,
                        "delay": INT,
                        "attributes": OBJ,
                        "dead_letter_eligible": {"type": "boolean"},
                    },
                    "required": ["body"],
                },
            }
        },
    },
    "Message": {
        "type": "object",
        "properties": {
            "id": STR,
            "href": STR,
            "ttl": INT,
            "age": INT,
            "body": {},
            "attributes": OBJ,
            "claim_count": INT,
            "enqueued_at": TIME,
            "provenance": {
                "type": "object",
                "properties": {
                    "source_queue": STR,
                    "reason": {"enum": ["max_claims", "expired", "rejected"]},
                    "description": STR,
                    "error": STR,
                    "dead_lettered_at": TIME,
                    "claim_count": INT,
                    "original_message_id": STR,
                    "original_enqueued_at": TIME,
                },
            },
            "history": {"type": "array", "items": OBJ},
        },
    },
    "ClaimTimes": {"type": "object", "properties": {"ttl": INT, "grace": INT}},
    "DeadLetter": {"type": "object", "properties": {"description": STR, "error": STR}},
    "DeadLetterBatch": {
        "type": "object",
        "properties": {
            "messages": {
                "type": "array",
                "items": {"type": "object", "properties": {"id": STR, "claim_id": STR}},
            },
            "description": STR,
            "error": STR,
        },
    },
    "Release": {"type": "object", "properties": {"delay": INT}},
    "Redrive": {
        "type": "object",
        "properties": {
            "destination": STR,
            "source_queue": STR,
            "reason": STR,
            "since": STR,
            "until": STR,
            "message_ids": {"type": "array", "items": STR},
            "pattern_id": STR,
            "rate": {"type": "number"},
        },
    },
    "Task": {
        "type": "object",
        "properties": {
            "id": STR,
            "href": STR,
            "dlq": STR,
            "destination": STR,
            "filter": OBJ,
            "rate": {"type": "number"},
            "status": {"enum": ["RUNNING", "COMPLETED", "CANCELLING", "CANCELLED", "FAILED"]},
            "moved": INT,
            "to_move": INT,
            "started_at": TIME,
            "updated_at": TIME,
            "failure_reason": STR,
        },
    },
    "Patterns": {"type": "object", "properties": {"patterns": {"type": "array", "items": OBJ}}},
}


def document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for path, method, handler, client_id in ROUTES:
        summary, query, status, body = OPERATIONS[handler.__name__]
        params: list[dict[str, Any]] = [
            {"name": name, "in": "path", "required": True, "schema": STR}
            for name in re.findall(r"{(\w+)}", path)
        ]
        params += [{"name": q, "in": "query", "schema": STR} for q in query]
        if client_id:
            params.append({"name": "Client-ID", "in": "header", "required": True, "schema": STR})
            params.append({"name": "X-Project-ID", "in": "header", "schema": STR})
        op: dict[str, Any] = {
            "operationId": handler.__name__,
            "summary": summary,
            "parameters": params,
            "responses": {
                status: {"description": "Success"},
                "default": {
                    "description": "Error",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                },
            },
        }
        if body is not None:
            op["requestBody"] = {
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}
                }
            }
        paths.setdefault(path, {})[method.lower()] = op
    paths["/metrics"] = {
        "get": {
            "summary": "Prometheus metrics",
            "responses": {"200": {"description": "Text exposition format"}},
        }
    }
    paths["/openapi.json"] = {
        "get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3.1"}}}
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "deadletter native API",
            "version": "2.0",
            "description": "OpenStack Zaqar v2 with dead-letter extensions.",
        },
        "paths": paths,
        "components": {"schemas": SCHEMAS},
    }


async def endpoint(request: Request) -> JSONResponse:
    return JSONResponse(document())
