"""New identifiers for messages, claims and tasks."""

from __future__ import annotations

import os
import time


def new_id() -> str:
    """A version-7 UUID (RFC 9562) in its canonical text form: the Unix time in milliseconds,
    then 74 random bits.

    Ids made one after another sort together, so a store's index on them grows at its end, as
    its index on the queue's sequence does: a batch of random (version-4) ids landed on as many
    pages of the index as it had messages, each written again at its commit. The random bits
    keep an id unguessable (74 of them, against 122). Spelled out from the bytes: `uuid.UUID`
    builds an integer and an object for every message id.
    """
    return id_at(time.time_ns() // 1_000_000)


def id_at(milliseconds: int) -> str:
    """`new_id`'s id for a moment given in Unix milliseconds."""
    raw = bytearray(milliseconds.to_bytes(6, "big") + os.urandom(10))
    raw[6] = (raw[6] & 0x0F) | 0x70  # version 7
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 9562 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
