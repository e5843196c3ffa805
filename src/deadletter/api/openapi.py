"""The OpenAPI document of the native API (Zaqar v2 plus the dead-letter extensions)."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request

from deadletter.api.json_response import JSONResponse
from deadletter.api.zaqar.context import PATH_NAMES
from deadletter.api.zaqar.parse import CLAIM_TIMES
from deadletter.api.zaqar.reads import FREE, READS
from deadletter.api.zaqar.routes import ROUTES
from deadletter.domain import names
from deadletter.domain import settings as declared
from deadletter.domain.filters import FILTER_KEYS
from deadletter.domain.model import Reason, TaskStatus

# The domain's enums, read from their types: a reason or a status added there is documented.
REASON = {"enum": [r.value for r in Reason]}
# The dead-letter filter language (domain/filters.py): text, but for these.
DEATHS: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 1_000_000}
FILTER_QUERY: dict[str, dict[str, Any]] = {
    "reason": REASON,
    "min_deaths": DEATHS,
    "max_deaths": DEATHS,
}
FILTER_FIELD: dict[str, Any] = {"type": ["string", "number"]}
TASK_STATUS = {"enum": [t.value for t in TaskStatus]}

# handler name -> (summary, success status, request body schema or None); the query
# parameters each reads are `reads.READS`'s.
OPERATIONS: dict[str, tuple[str, str, str | None]] = {
    "versions": ("API versions (300 Multiple Choices)", "300", None),
    "home": ("JSON home document", "200", None),
    "ping": ("Liveness check", "204", None),
    "health": ("Storage health", "200", None),
    "list_queues": ("List queues", "200", None),
    "create_queue": ("Create a queue with metadata (201; 204 when it exists)", "201", "Metadata"),
    "get_queue": (
        "Queue metadata: user keys and the reserved keys that are set (with defaults=true,"
        " every reserved key, its default where unset)",
        "200",
        None,
    ),
    "patch_queue": (
        "Update metadata (application/openstack-messaging-v2.0-json-patch)",
        "200",
        "Patch",
    ),
    "delete_queue": ("Delete a queue and its messages", "204", None),
    "queue_stats": ("Message counts and dead-letter counters", "200", None),
    "purge_queue": ("Delete every message of the queue", "204", "Purge"),
    "post_messages": ("Send messages (the queue is created if missing)", "201", "NewMessages"),
    "list_messages": ("List messages, or get some by ids", "200", None),
    "delete_messages": ("Delete messages by ids, or pop some", "204", None),
    "get_message": ("One message", "200", None),
    "delete_message": ("Acknowledge one message", "204", None),
    "dead_letter_message": (
        "Move one claimed message to the DLQ now (reason rejected)",
        "200",
        "DeadLetter",
    ),
    "release_message": ("Give one claimed message back (nack)", "204", "Release"),
    "create_claim": (
        "Claim messages (204 when none); with acknowledge, first acknowledge the last batch",
        "201",
        "ClaimRequest",
    ),
    "get_claim": ("A claim and its messages", "200", None),
    "renew_claim": ("Renew a claim", "204", "ClaimTimes"),
    "release_claim": ("Release a claim", "204", None),
    "dead_letter_batch": ("Move several claimed messages to the DLQ", "200", "DeadLetterBatch"),
    "list_dead_letters": ("Browse a DLQ without consuming it", "200", None),
    "count_dead_letters": ("How many dead letters a filter selects now", "200", None),
    "purge_dead_letters": ("Delete the dead letters a filter selects", "200", None),
    "edit_dead_letter": (
        "Patch a dead letter's body or attributes (merge patch or JSON Patch)",
        "200",
        "DeadLetterEdit",
    ),
    "dead_letter_sources": ("Queues whose dead-letter policy names this queue", "200", None),
    "start_redrive": ("Start a redrive task", "201", "Redrive"),
    "list_redrives": ("Redrive tasks of a DLQ, newest first", "200", None),
    "get_redrive": ("One redrive task", "200", None),
    "cancel_redrive": ("Cancel a running or paused redrive task (202)", "202", None),
    "resume_redrive": ("Resume a task its canary paused: move the rest (202)", "202", None),
    "put_patterns": ("Store failure patterns found by the analysis", "204", "Patterns"),
    "get_patterns": ("Stored failure patterns", "200", None),
    "merge_assignments": (
        "Merge a writer's batch of pattern assignments, once per (writer, batch)",
        "200",
        "Assignments",
    ),
    "list_templates": ("Queue templates of the project, by name", "200", None),
    "put_template": ("Create (201) or replace (200) a queue template", "201", "Template"),
    "get_template": ("One queue template", "200", None),
    "patch_template": ("Change a template's keys (null clears one)", "200", "Template"),
    "delete_template": ("Delete a queue template", "204", None),
    "create_subscription": (
        "Subscribe an http(s) webhook to the queue's messages",
        "201",
        "Subscription",
    ),
    "list_subscriptions": ("Live subscriptions of the queue", "200", None),
    "get_subscription": ("One subscription", "200", None),
    "update_subscription": (
        "Change a subscription's subscriber, ttl or options",
        "204",
        "Subscription",
    ),
    "delete_subscription": ("Unsubscribe (204 even when it did not exist)", "204", None),
    "confirm_subscription": (
        "Confirm (or withdraw) a subscription, with the signed URL sent to the subscriber",
        "204",
        "Confirmation",
    ),
    "list_tags": ("The queue's consumer tags, with their counts", "200", None),
    "create_tag": ("Create a consumer tag on the queue", "201", "Tag"),
    "get_tag": ("One consumer tag, with its counts", "200", None),
    "delete_tag": ("Delete a consumer tag (204 even when it did not exist)", "204", None),
}

# Further successes an operation may answer with (204: nothing to claim or queue existed;
# 200: a pop returns the popped messages, a claim that acknowledged but claimed nothing).
ALSO: dict[str, list[str]] = {
    "create_queue": ["204"],
    "create_claim": ["204", "200"],
    "delete_messages": ["200"],
}
# Errors every operation may answer with; the rest are declared where they can happen.
ERRORS = {
    "400": "Invalid request (every value is checked before anything is written)",
    "404": "No such queue, message, claim, task or path",
    "405": "Method not allowed on this path",
    "413": "Request body too large",
}
MORE_ERRORS: dict[str, dict[str, str]] = {
    "patch_queue": {"409": "Conflict", "415": "Wrong Content-Type for a patch"},
    "delete_message": {"403": "Claim required"},
    "dead_letter_message": {
        "403": "Claim required",
        "409": "No active dead-letter policy, or the DLQ is full (its bound refuses them)",
    },
    "dead_letter_batch": {
        "403": "Claim required",
        "409": "No active dead-letter policy, or the DLQ is full (its bound refuses them)",
    },
    "release_message": {"403": "Claim required", "409": "Conflict"},
    "create_queue": {"409": "Conflict"},
    "merge_assignments": {"409": "Batch behind"},
    "post_messages": {
        "403": "Message is claimed",
        "409": "Queue is full: its bound refuses the send (_overflow reject-publish[-dlx]),"
        " or its DLQ refuses the oldest messages drop-head would push out",
    },
    "delete_messages": {"403": "Message is claimed"},
    "start_redrive": {"409": "A redrive task is already running"},
    "edit_dead_letter": {
        "409": "The JSON Patch does not apply",
        "415": "Wrong Content-Type for an edit",
    },
    "cancel_redrive": {"409": "The task is not running"},
    "resume_redrive": {"409": "The task is not paused, or another runs on its DLQ"},
    "renew_claim": {"409": "Conflict"},
    "create_subscription": {"409": "Subscribed and confirmed already"},
    "update_subscription": {"409": "The new subscriber is subscribed already"},
    "create_tag": {"409": "The queue has a tag of that name already"},
}


def _whole(kind: names.Kind) -> dict[str, Any]:
    """A name's schema: its kind's one pattern, matched whole."""
    return {"type": "string", "pattern": f"^(?:{kind.pattern.pattern})$"}


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
    "tag": _whole(names.TAG),
    "source_tag": _whole(names.TAG),
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
MERGE_PATCH_TYPE = "application/merge-patch+json"
MEDIA_TYPES = {"home": "application/json-home"}
EMPTY = {("create_queue", "201")}  # answered with a Location header only

OBJ: dict[str, Any] = {"type": "object"}
INT: dict[str, Any] = {"type": "integer"}
STR: dict[str, Any] = {"type": "string"}
TIME: dict[str, Any] = {"type": "string", "format": "date-time"}
# One text, or its fields (Kafka Connect's error context).
ERROR: dict[str, Any] = {
    "oneOf": [
        STR,
        {
            "type": "object",
            "properties": {"class": STR, "message": STR, "stack": STR},
            "additionalProperties": False,
            "minProperties": 1,
        },
    ]
}
TTL: dict[str, Any] = {"type": "integer", "minimum": 60, "maximum": 1_209_600}
CLAIM_TTL: dict[str, Any] = {
    "type": ["integer", "null"],
    "minimum": CLAIM_TIMES[0],
    "maximum": CLAIM_TIMES[1],
}
EPOCH: dict[str, Any] = {"type": ["number", "string"], "minimum": 0, "maximum": 1e11}


def _optional(setting: declared.Setting) -> dict[str, Any]:
    """A queue setting a template may leave out (null), within its declared range."""
    return {"type": ["integer", "null"], "minimum": setting.low, "maximum": setting.high}


def _nullable(setting: declared.Setting, face: declared.Name) -> dict[str, Any]:
    """A reserved metadata key within its range on the Zaqar face; null where unset."""
    low, high = setting.face_range(face)
    return {"type": ["integer", "null"], "minimum": low, "maximum": high}


def _retry_policy() -> dict[str, Any]:
    members = declared.members(declared.RETRY_POLICY.zaqar, "zaqar")
    return {
        "type": ["object", "null"],
        "description": "Backoff of a message given back without a delay or whose claim lapses:"
        " minimum_backoff * 2^(deliveries - 1) seconds, at most maximum_backoff (docs/api.md).",
        "properties": {
            key: {"type": "integer", "minimum": s.low, "maximum": s.high}
            for key, s in members.items()
        },
        "required": list(members),
        "additionalProperties": False,
    }


SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "properties": {"title": STR, "description": STR},
        "required": ["title", "description"],
    },
    "Metadata": {
        "type": "object",
        "description": "User keys plus reserved keys (_default_message_ttl, _max_claim_count,"
        " _max_redelivery, _retry_policy, _dead_letter_queue, _redrive_allow, ...; docs/api.md"
        " lists them all).",
        "properties": {
            # A bounded queue (RabbitMQ's x-max-length, x-max-length-bytes, x-overflow).
            **{
                s.zaqar.name: {**_optional(s), "description": f"The queue's {s.what}."}
                for s in declared.OPTIONAL
                if s.zaqar is not None
            },
            declared.OVERFLOW.zaqar: {
                "enum": list(declared.OVERFLOW.choices),
                "description": "What a send past a bound does: drop-head dead-letters the"
                " oldest (reason maxlen), reject-publish refuses the send (409),"
                " reject-publish-dlx refuses it and dead-letters the refused messages.",
            },
            declared.MAX_REDELIVERY.name: {
                **_nullable(declared.MAX_CLAIMS, declared.MAX_REDELIVERY),
                "description": "Solace's max redelivery: _max_claim_count less one.",
            },
            declared.RETRY_POLICY.zaqar: _retry_policy(),
        },
    },
    "Template": {
        "type": "object",
        "description": "A glob over queue names and the settings it gives queues created"
        " without them (docs/solace-model.md).",
        "properties": {
            "pattern": STR,
            "max_claims": _optional(declared.MAX_CLAIMS),
            "dlq": {"type": ["string", "null"]},
            "dlq_message_ttl": _optional(declared.DLQ_MESSAGE_TTL),
            "on_expiry": {"type": ["boolean", "null"]},
            "default_ttl": _optional(declared.DEFAULT_TTL),
            "max_ttl": _optional(declared.MAX_MESSAGE_TTL),
            "min_ttl": _optional(declared.MIN_MESSAGE_TTL),
            "respect_ttl": {"type": ["boolean", "null"]},
            "dead_letter_eligible": {"type": ["boolean", "null"]},
            "retry_policy": _retry_policy(),
        },
    },
    "Patch": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"op": {"enum": ["add", "replace", "remove"]}, "path": STR, "value": {}},
            "required": ["op", "path"],
        },
    },
    "Purge": {
        "type": "object",
        "properties": {
            "resource_types": {
                "type": "array",
                "items": {"enum": ["messages", "subscriptions"]},
            }
        },
    },
    "NewMessages": {
        "type": "object",
        "properties": {
            "messages": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "body": {},
                        "ttl": TTL,
                        "delay": {"type": "integer", "minimum": 0, "maximum": 900},
                        "attributes": OBJ,
                        "dead_letter_eligible": {"type": "boolean"},
                    },
                    "required": ["body"],
                },
            }
        },
        "required": ["messages"],
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
            "visible_at": TIME,
            "provenance": {
                "type": "object",
                "properties": {
                    "source_queue": STR,
                    "reason": REASON,
                    "description": STR,
                    "error": STR,
                    "error_class": STR,
                    "error_stack": STR,
                    "deaths": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "queue": STR,
                                "reason": STR,
                                "count": INT,
                                "first_at": TIME,
                                "last_at": TIME,
                            },
                        },
                    },
                    "dead_lettered_at": TIME,
                    "claim_count": INT,
                    "original_message_id": STR,
                    "original_enqueued_at": TIME,
                },
            },
            "history": {"type": "array", "items": OBJ},
        },
    },
    "ClaimTimes": {"type": "object", "properties": {"ttl": CLAIM_TTL, "grace": CLAIM_TTL}},
    "ClaimRequest": {
        "type": "object",
        "properties": {
            "ttl": CLAIM_TTL,
            "grace": CLAIM_TTL,
            "acknowledge": {
                "type": "object",
                "description": "Messages of an earlier claim the consumer is done with,"
                " deleted in the claim's own transaction where that claim still holds them;"
                " the answer lists them as acknowledged (200 when nothing more is claimed).",
                "properties": {
                    "claim_id": STR,
                    "ids": {"type": "array", "minItems": 1, "maxItems": 20, "items": STR},
                },
                "required": ["claim_id", "ids"],
                "additionalProperties": False,
            },
        },
    },
    # `reason` is the consumer's own words, as `description` (one of the two): kept as the
    # dead letter's description beside its reason `rejected`.
    "DeadLetter": {
        "type": "object",
        "properties": {"description": STR, "reason": STR, "error": ERROR},
    },
    "DeadLetterBatch": {
        "type": "object",
        "properties": {
            "messages": {
                "type": "array",
                "minItems": 1,
                "maxItems": 100,
                "items": {
                    "type": "object",
                    "properties": {"id": STR, "claim_id": STR},
                    "required": ["id", "claim_id"],
                },
            },
            "description": STR,
            "reason": STR,
            "error": ERROR,
        },
    },
    "Release": {
        "type": "object",
        "description": "Without a delay, the queue's _retry_policy sets it (docs/api.md).",
        "properties": {
            "delay": {
                "type": "integer",
                "minimum": declared.CLAIM_TTL.low,
                "maximum": declared.CLAIM_TTL.high,
            },
            # false: dead-lettered at once (reason rejected), or dropped without a DLQ.
            "requeue": {"type": "boolean", "default": True},
        },
    },
    "Redrive": {
        "type": "object",
        "properties": {
            "destination": STR,
            "source_queue": STR,
            "source_tag": STR,
            "reason": REASON,
            "since": EPOCH,
            "until": EPOCH,
            "message_ids": {"type": "array", "items": STR, "maxItems": 10_000},
            "pattern_id": STR,
            **{k: FILTER_FIELD for k in FILTER_KEYS if k not in ("reason", "since", "until")},
            "attribute": {
                "description": "NAME=VALUE (or NAME: present); a list, each must hold",
                "oneOf": [STR, {"type": "array", "items": STR, "maxItems": 10}],
            },
            "dry_run": {
                "description": "Count what the task would select, and start nothing",
                "type": "boolean",
            },
            "transform": {
                "description": "A JSON Merge Patch of {body, attributes} applied to each"
                " dead letter as it moves, kept in its history",
                "type": "object",
            },
            "rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e6},
            "canary": {
                "description": "Move this many dead letters first (or this percentage of those"
                ' selected, as "10%"), watch them, then the rest or a pause',
                "oneOf": [
                    {"type": "integer", "minimum": 1, "maximum": 1_000_000},
                    {"type": "string", "pattern": "^([0-9]{1,7}|[0-9]{1,3}(\\.[0-9]{1,6})?%)$"},
                ],
            },
            "watch": {
                "description": "Seconds to watch the canary for re-deaths (with canary only)",
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 86_400,
                "default": 60,
            },
            "max_redeath": {
                "description": "The percentage of the canary that may die again and the task"
                " still go on (with canary only)",
                "type": "number",
                "minimum": 0,
                "maximum": 100,
                "default": 0,
            },
        },
    },
    "DeadLetterEdit": {
        "description": "A JSON Merge Patch (application/merge-patch+json) of"
        ' {"body", "attributes"}, or a JSON Patch (application/json-patch+json) of it',
        "type": ["object", "array"],
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
            "status": TASK_STATUS,
            "moved": INT,
            "to_move": INT,
            "started_at": TIME,
            "updated_at": TIME,
            "failure_reason": STR,
            "canary": OBJ,
        },
    },
    "Confirmation": {
        "type": "object",
        "required": ["confirmed"],
        "additionalProperties": False,
        "properties": {"confirmed": {"type": "boolean"}},
    },
    "Subscription": {
        "type": "object",
        "properties": {
            "subscriber": {"type": "string", "format": "uri", "maxLength": 2048},
            "ttl": {"type": "integer", "minimum": 60},
            "options": OBJ,
        },
    },
    "Tag": {
        "type": "object",
        "properties": {
            "start": EPOCH,
            "filter": {
                "type": "object",
                "properties": {"attribute": STR, "value": STR},
                "required": ["attribute", "value"],
            },
        },
    },
    "Patterns": {
        "type": "object",
        "properties": {
            "patterns": {
                "type": "array",
                "maxItems": 1000,
                "items": {"type": "object", "properties": {"id": STR}, "required": ["id"]},
            }
        },
        "required": ["patterns"],
    },
    "Assignments": {
        "type": "object",
        "additionalProperties": False,
        "required": ["writer", "batch", "assignments"],
        "properties": {
            "writer": {"type": "string", "minLength": 1, "maxLength": 200},
            "batch": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
            "assignments": {
                "type": "array",
                "minItems": 1,
                "maxItems": 10_000,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["message_id", "pattern_id"],
                    "properties": {
                        "message_id": {"type": "string", "minLength": 1, "maxLength": 256},
                        "pattern_id": {"type": "string", "minLength": 1, "maxLength": 256},
                        "template": {"type": ["string", "null"], "maxLength": 4096},
                        "signature": {"type": ["string", "null"], "maxLength": 4096},
                        "dead_lettered_at": {**EPOCH, "type": ["number", "string", "null"]},
                    },
                },
            },
        },
    },
}


def _json(schema: dict[str, Any], media_type: str = "application/json") -> dict[str, Any]:
    return {"content": {media_type: {"schema": schema}}}


def _responses(handler: str, status: str) -> dict[str, Any]:
    error = _json({"$ref": "#/components/schemas/Error"})
    out: dict[str, Any] = {}
    for code in [status, *ALSO.get(handler, [])]:
        empty = code == "204" or (handler, code) in EMPTY
        body = {} if empty else _json({}, MEDIA_TYPES.get(handler, "application/json"))
        out[code] = {"description": "Success", **body}
    for code, what in {**ERRORS, **MORE_ERRORS.get(handler, {})}.items():
        out[code] = {"description": what, **error}
    return out


def _schemas() -> dict[str, Any]:
    """The body schemas; one whose route declares its fields (`reads.READS`) takes no other."""
    schemas = dict(SCHEMAS)
    for name, (_, _, body) in OPERATIONS.items():
        fields = READS[name].body
        if body is not None and fields is not None and fields is not FREE:
            schemas[body] = {**schemas[body], "additionalProperties": False}
    return schemas


def document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for path, method, handler, client_id in ROUTES:
        name = handler.__name__
        summary, status, body = OPERATIONS[name]
        query = READS[name].query
        params: list[dict[str, Any]] = [
            {
                "name": part,
                "in": "path",
                "required": True,
                "schema": _whole(PATH_NAMES[part]) if part in PATH_NAMES else STR,
            }
            for part in re.findall(r"{(\w+)}", path)
        ]
        typed = {**QUERY, **QUERY_BY_OP.get(name, {})}
        params += [{"name": q, "in": "query", "schema": typed.get(q, STR)} for q in query]
        if client_id:
            uuid = {"type": "string", "format": "uuid"}
            params.append({"name": "Client-ID", "in": "header", "required": True, "schema": uuid})
            params.append(
                {
                    "name": "X-Project-ID",
                    "in": "header",
                    "schema": _whole(names.PROJECT),
                }
            )
        op: dict[str, Any] = {
            "operationId": name,
            "summary": summary,
            "parameters": params,
            "responses": _responses(name, status),
        }
        if body is not None:
            media_type = {"Patch": PATCH_TYPE, "DeadLetterEdit": MERGE_PATCH_TYPE}.get(
                body, "application/json"
            )
            op["requestBody"] = _json({"$ref": f"#/components/schemas/{body}"}, media_type)
        paths.setdefault(path, {})[method.lower()] = op
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
        "components": {"schemas": _schemas()},
    }


async def endpoint(request: Request) -> JSONResponse:
    return JSONResponse(document())
