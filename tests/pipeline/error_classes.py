"""Dead letters whose consumers gave the exception class as a field: texts alike across
classes, each class spelled in its text in the ways consumers write it."""

from __future__ import annotations

import random
from typing import Any

CLASSES = ["ValueError", "orders.errors.PriceError", "java.lang.IllegalStateException"]


def spellings(error_class: str, message: str) -> list[str]:
    """The error texts one failure may carry: the class qualified, bare, or left out."""
    short = error_class.rsplit(".", 1)[-1]
    return [f"{error_class}: {message}", f"{short}: {message}", message]


def structured(count: int, seed: int) -> list[dict[str, Any]]:
    """`count` export records, one message template shared by every class; some give the
    class and no message, so their text is the class (as the API's `error` reads then)."""
    rng = random.Random(seed)
    records = []
    for i in range(count):
        error_class = CLASSES[i % len(CLASSES)]
        message = f"no price for sku {rng.randrange(10_000)} in order {rng.randrange(10**6)}"
        error = error_class if i % 7 == 0 else rng.choice(spellings(error_class, message))
        records.append(
            {
                "message_id": f"cls-{i:04d}",
                "source_queue": "orders",
                "reason": "rejected",
                "description": None,
                "error": error,
                "error_class": error_class,
                "dead_lettered_at": f"2026-11-21T10:{i % 60:02d}:07Z",
                "claim_count": 3,
                "body": {"sku": i},
                "attributes": {},
                "enqueued_at": None,
            }
        )
    return records
