"""Receipt handles, which a receive hands out and a delete or a visibility change reads
back, and the consumer tag a queue URL may name."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from deadletter.api.sqs.errors import (
    missing_parameter,
    queue_does_not_exist,
    receipt_handle_invalid,
)
from deadletter.domain import names

# A queue URL whose name ends in `:<tag>` addresses one consumer tag of the queue (a colon is
# never in an SQS queue name): receives are the tag's, and the receipt handles they return
# carry the tag, so that deleting or changing the visibility of the message is the tag's too,
# through either URL (docs/sqs.md).
TAG_SEPARATOR = ":"


def tagged_queue(name: str) -> tuple[str, str | None]:
    """(queue, tag) of a queue name from a QueueUrl."""
    queue, separator, tag = name.partition(TAG_SEPARATOR)
    if not separator:
        return name, None
    if not names.TAG.valid(tag):
        raise queue_does_not_exist(name)
    return queue, tag


def receipt_handle(claim_id: str, message_id: str, tag: str | None = None) -> str:
    text = f"{claim_id}:{message_id}" + (f":{tag}" if tag is not None else "")
    return base64.urlsafe_b64encode(text.encode()).decode()


_URLSAFE = bytes.maketrans(b"-_", b"+/")


def parse_receipt_handle(handle: Any) -> tuple[str, str, str | None]:
    """(claim id, message id, consumer tag or None) of a receipt handle."""
    if handle is None or handle == "":
        raise missing_parameter("ReceiptHandle")
    if not isinstance(handle, str):
        raise receipt_handle_invalid(str(handle))
    try:
        # `base64.urlsafe_b64decode`, without its two layers of checks on what it is given.
        raw = binascii.a2b_base64(handle.encode().translate(_URLSAFE), strict_mode=False)
        parts = raw.decode().split(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise receipt_handle_invalid(handle) from None
    if len(parts) not in (2, 3):
        raise receipt_handle_invalid(handle)
    claim_id, message_id = parts[:2]
    tag = parts[2] if len(parts) == 3 else None
    if not (names.ID.valid(claim_id) and names.ID.valid(message_id)):
        raise receipt_handle_invalid(handle)
    if tag is not None and not names.TAG.valid(tag):
        raise receipt_handle_invalid(handle)
    return claim_id, message_id, tag
