"""New identifiers for messages, claims and tasks."""

from __future__ import annotations

import uuid


def new_id() -> str:
    return str(uuid.uuid4())
