"""The OpenAPI document's schemas of the failure patterns' bodies: a set the analysis stores,
a writer's batch of assignments merged into it, and a pattern split by hand at a position."""

from __future__ import annotations

from typing import Any

from deadletter.api.openapi.schemas import EPOCH, STR

PATTERN_SCHEMAS: dict[str, Any] = {
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
    # Extra fields are refused (the route's row reads these alone: paths.py closes it).
    "PatternSplit": {
        "type": "object",
        "required": ["position"],
        "properties": {
            "position": {"type": "integer", "minimum": 1, "maximum": 4096},
            "dry_run": {"type": "boolean"},
        },
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
