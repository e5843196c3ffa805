"""New identifiers for messages, claims and tasks."""

from __future__ import annotations

import os


def new_id() -> str:
    """A random version-4 UUID in its canonical text form.

    Spelled out from 16 random bytes: `str(uuid.uuid4())` builds an integer and a UUID object
    for every message id, which costs over twice as much on the send path.
    """
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
