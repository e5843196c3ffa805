"""Storing analysis results on the server: `PUT /v2/queues/{dlq}/patterns`."""

from __future__ import annotations

from typing import Any

import httpx

from deadletter.client import DEFAULT_PROJECT, Client

# Thousands of message ids per pattern make a large body for the server to store at once.
PUT_TIMEOUT = 120.0


def put_patterns(
    url: str,
    queue: str,
    patterns: list[dict[str, Any]],
    project: str | None = None,
    transport: httpx.BaseTransport | None = None,
    credential: tuple[str, str] | None = None,
) -> None:
    """Replace the DLQ's stored patterns, each with its message ids, so a redrive can pick one.
    With a `credential` (key id, secret) and no project, the credential's project is used."""
    project = project or (None if credential else DEFAULT_PROJECT)
    with Client(
        url, project=project, transport=transport, timeout=PUT_TIMEOUT, credential=credential
    ) as client:
        client.put_patterns(queue, patterns)
