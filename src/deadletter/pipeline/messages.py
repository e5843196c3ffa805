"""Dead letters as the native API serves them, read into SCHEMA's rows: by the Spark data
source's partitions and by the in-process path alike (no pyspark here)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from deadletter.client import DEFAULT_PROJECT, Client
from deadletter.domain.filters import blank
from deadletter.pipeline.columns import parse_time


def client_of(options: dict[str, str]) -> Client:
    """A client made from the data source's options; each executor task opens its own.
    With `key_id` and `secret` (a server with credentials required), an unstated project is
    the credential's own."""
    credential = (options["key_id"], options["secret"]) if options.get("key_id") else None
    return Client(
        options["url"],
        project=options.get("project") or (None if credential else DEFAULT_PROJECT),
        client_id=options.get("client_id") or None,
        timeout=float(options.get("timeout", "30")),
        credential=credential,
    )


def filter_option(options: dict[str, str]) -> dict[str, list[str]]:
    """The option `filter`: the dead-letter filter language as one query string
    (`error_class=KeyError&attribute=tenant=acme`, as StartMessageMoveTask's DeadLetterFilter),
    sent on with every read; the server refuses a bad one. Given but blank, it is refused
    here: a read that asked for a selection must not read the whole DLQ."""
    text = options.get("filter")
    if text is None:
        return {}
    if blank(text):
        raise ValueError("the deadletter data source's option filter is empty; leave it out")
    given: dict[str, list[str]] = {}
    for key, value in parse_qsl(text, keep_blank_values=True):
        given.setdefault(key, []).append(value)
    return given


def row_of(message: dict[str, Any]) -> tuple[Any, ...]:
    """One API message -> a row in SCHEMA's column order."""
    prov = message.get("provenance") or {}
    body = message.get("body")
    body_text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    attributes = {
        name: str(attr.get("value")) if isinstance(attr, dict) else str(attr)
        for name, attr in (message.get("attributes") or {}).items()
    }
    claim_count = prov.get("claim_count", message.get("claim_count"))
    return (
        message.get("id"),
        prov.get("source_queue"),
        prov.get("reason"),
        prov.get("description"),
        prov.get("error"),
        parse_time(prov.get("dead_lettered_at")),
        int(claim_count) if claim_count is not None else None,
        body_text,
        attributes,
        parse_time(prov.get("original_enqueued_at") or message.get("enqueued_at")),
        prov.get("error_class"),
    )
