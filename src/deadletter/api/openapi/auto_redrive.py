"""The OpenAPI schema of a DLQ's automatic redrive policy, the body of
`PUT /v2/queues/{dlq}/dead_letters/auto_redrive` (`api/zaqar/auto_redrive.py`)."""

from __future__ import annotations

from typing import Any

from deadletter.api.openapi.schemas import FILTER_FIELD
from deadletter.domain.auto_redrive import MAX_INTERVAL, MAX_ROUNDS, MIN_INTERVAL
from deadletter.domain.filters import FILTER_KEYS

SCHEMAS: dict[str, Any] = {
    "AutoRedrive": {
        "type": "object",
        "required": ["filter", "interval", "max_rounds"],
        "properties": {
            "filter": {
                "description": "The filter language's fields; {} selects the whole DLQ",
                "type": "object",
                "properties": {k: FILTER_FIELD for k in FILTER_KEYS},
                "additionalProperties": False,
            },
            "interval": {
                "description": "Seconds between rounds",
                "type": "integer",
                "minimum": MIN_INTERVAL,
                "maximum": MAX_INTERVAL,
            },
            "max_rounds": {
                "description": "How many times a dead letter is sent back at most",
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_ROUNDS,
            },
            "rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e6},
            "canary": {
                "description": "Each round's canary, as a redrive takes it",
                "oneOf": [{"type": "integer", "minimum": 1, "maximum": 10_000}, {"type": "string"}],
            },
            "watch": {"type": "number", "exclusiveMinimum": 0, "maximum": 86_400},
            "max_redeath": {"type": "number", "minimum": 0, "maximum": 100},
            "force": {"type": "boolean"},
            "enabled": {
                "description": "false: set it stopped; left out: keep its state",
                "type": "boolean",
            },
        },
    },
}
