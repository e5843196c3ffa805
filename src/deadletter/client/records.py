"""Messages as the command line gives them (a body: JSON when it parses) and as an export
writes them (one record a dead letter)."""

from __future__ import annotations

import json
from typing import Any


def export_record(message: dict[str, Any]) -> dict[str, Any]:
    """A dead letter as one line of the export format the analysis reads (docs/pipeline.md)."""
    prov = message.get("provenance") or {}
    return {
        "message_id": message.get("id"),
        "source_queue": prov.get("source_queue"),
        "reason": prov.get("reason"),
        "description": prov.get("description"),
        "error": prov.get("error"),
        "error_class": prov.get("error_class"),
        "dead_lettered_at": prov.get("dead_lettered_at"),
        "claim_count": prov.get("claim_count", message.get("claim_count")),
        "body": message.get("body"),
        "attributes": message.get("attributes") or {},
        "enqueued_at": prov.get("original_enqueued_at") or message.get("enqueued_at"),
        "history": message.get("history") or [],
    }


def parse_body(text: str) -> Any:
    """A message body from the command line: JSON when it parses, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text
