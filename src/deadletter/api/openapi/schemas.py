"""The OpenAPI document's component schemas: the request bodies of the native API and what
its answers hold. Every enum is read from the type that declares it (a dead-letter reason, a
task's status, an overflow mode, ...), so a value added there is documented here."""

from __future__ import annotations

from typing import Any

from deadletter.api.zaqar.parse import CLAIM_TIMES, PATCH_OPS
from deadletter.api.zaqar.queues import PURGE_KINDS
from deadletter.domain import names
from deadletter.domain import settings as declared
from deadletter.domain.failure_groups import (
    DEFAULT_RETENTION,
    MAX_REASON,
    MAX_RETENTION,
    MIN_RETENTION,
)
from deadletter.domain.filters import FILTER_KEYS
from deadletter.domain.provenance import Reason
from deadletter.domain.redrive import CanaryDecision, SkipReason, TaskStatus


def enum(values: Any, nullable: bool = False) -> dict[str, Any]:
    """The schema of one of `values` (an enum type, or a tuple of the texts a parser takes)."""
    texts: list[Any] = [getattr(v, "value", v) for v in values]
    return {"enum": [*texts, None] if nullable else texts}


# The domain's enums, read from their types: a reason or a status added there is documented.
REASON = enum(Reason)
TASK_STATUS = enum(TaskStatus)
# The dead-letter filter language (domain/filters.py): text, but for these.
DEATHS: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 1_000_000}
FILTER_QUERY: dict[str, dict[str, Any]] = {
    "reason": REASON,
    "min_deaths": DEATHS,
    "max_deaths": DEATHS,
}
FILTER_FIELD: dict[str, Any] = {"type": ["string", "number"]}


def whole(kind: names.Kind) -> dict[str, Any]:
    """A name's schema: its kind's one pattern, matched whole."""
    return {"type": "string", "pattern": f"^(?:{kind.pattern.pattern})$"}


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


# A consumer tag's own policy: each null or absent field takes the queue's.
_TAG_POLICY: dict[str, Any] = {
    "max_claims": _optional(declared.MAX_CLAIMS),
    "dead_letter_queue": {"type": ["string", "null"]},
    "retry_policy": _retry_policy(),
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
                **enum(declared.OVERFLOW.choices),
                "description": "What a send past a bound does: drop-head dead-letters the"
                " oldest (reason maxlen), reject-publish refuses the send (409),"
                " reject-publish-dlx refuses it and dead-letters the refused messages.",
            },
            declared.MAX_REDELIVERY.name: {
                **_nullable(declared.MAX_CLAIMS, declared.MAX_REDELIVERY),
                "description": "Solace's max redelivery: _max_claim_count less one.",
            },
            declared.RETRY_POLICY.zaqar: _retry_policy(),
            declared.DLQ_ROUTES.zaqar: {
                "type": ["object", "null"],
                "description": "Where dead letters of a reason go instead of _dead_letter_queue:"
                " reason -> queue name (docs/api.md).",
                "propertyNames": enum(Reason),
                "additionalProperties": STR,
            },
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
            "properties": {"op": enum(PATCH_OPS), "path": STR, "value": {}},
            "required": ["op", "path"],
        },
    },
    "Purge": {
        "type": "object",
        "properties": {
            "resource_types": {
                "type": "array",
                "items": enum(PURGE_KINDS),
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
                                "reason": REASON,
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
            "message_ids": {"type": "array", "items": STR, "minItems": 1, "maxItems": 10_000},
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
                    {"type": "integer", "minimum": 1, "maximum": 10_000},
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
            "seed": {
                "description": "The seed of the canary's draw, to draw the same sample again"
                " (with canary only; by default one derived from the task's id)",
                "type": "integer",
                "minimum": 0,
                "maximum": 4_294_967_295,
            },
            "force": {
                "description": "A canary over a pattern flagged impure too, which is refused"
                " otherwise (with canary only)",
                "type": "boolean",
                "default": False,
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
            "filter": {
                "type": "object",
                "properties": {"reason": enum(Reason, nullable=True)},
            },
            "rate": {"type": "number"},
            "status": TASK_STATUS,
            "moved": INT,
            "to_move": INT,
            "started_at": TIME,
            "updated_at": TIME,
            "failure_reason": STR,
            "skipped": INT,
            "skipped_messages": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"id": STR, "reason": enum(SkipReason)},
                },
            },
            "gone": INT,
            "canary": {
                "type": "object",
                "properties": {"decision": enum(CanaryDecision, nullable=True)},
            },
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
            **_TAG_POLICY,
        },
    },
    "TagPolicy": {
        "type": "object",
        "description": "A tag's own dead-letter policy and retry backoff; null takes the"
        " queue's (docs/api.md).",
        "properties": _TAG_POLICY,
    },
}


def _selection(**extra: dict[str, Any]) -> dict[str, Any]:
    """A failure group's selection: the filter language's fields (none empty), and `extra`."""
    fields: dict[str, Any] = {k: {**FILTER_FIELD, "minLength": 1} for k in FILTER_KEYS}
    fields["filter"] = {**whole(names.SAVED_FILTER), "description": "A filter saved on the DLQ"}
    fields["reason"] = REASON
    fields["attribute"] = {"oneOf": [STR, {"type": "array", "items": STR, "minItems": 1}]}
    fields["message_ids"] = {"type": "array", "items": STR, "minItems": 1, "maxItems": 10_000}
    return {"type": "object", "additionalProperties": False, "properties": {**fields, **extra}}


DRY_RUN: dict[str, Any] = {"description": "Count, change nothing", "type": "boolean"}
SCHEMAS.update(
    {
        "SavedFilter": {
            **_selection(),
            "properties": {
                k: v
                for k, v in _selection()["properties"].items()
                if k not in ("filter", "message_ids")
            },
            "minProperties": 1,
        },
        "Archive": {
            **_selection(
                retention={
                    "type": "integer",
                    "minimum": MIN_RETENTION,
                    "maximum": MAX_RETENTION,
                    "default": DEFAULT_RETENTION,
                },
                dry_run=DRY_RUN,
            ),
            "minProperties": 1,
        },
        "Restore": _selection(dry_run=DRY_RUN),
        "Discard": {
            **_selection(
                why={
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_REASON,
                    "description": "Why they go (required)",
                },
                dry_run=DRY_RUN,
            ),
            "required": ["why"],
        },
    }
)
