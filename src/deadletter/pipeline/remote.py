"""Storing analysis results on the server: `PUT /v2/queues/{dlq}/patterns`."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from deadletter.pipeline.schema import DEFAULT_PROJECT


def put_patterns(
    url: str,
    queue: str,
    patterns: list[dict[str, Any]],
    project: str | None = None,
    transport: httpx.BaseTransport | None = None,
) -> None:
    """Replace the DLQ's stored patterns, each with its message ids, so a redrive can pick one."""
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project or DEFAULT_PROJECT}
    with httpx.Client(
        base_url=url.rstrip("/"), headers=headers, timeout=120, transport=transport
    ) as c:
        response = c.put(f"/v2/queues/{queue}/patterns", json={"patterns": patterns})
        response.raise_for_status()
