"""The SQS names of FIFO queues: the `.fifo` suffix, the FIFO attributes <-> settings, and the
FIFO parameters of a send (the engine owns ordering and deduplication: engine.fifo).

    FifoQueue                  fifo (fixed at creation; the name ends in .fifo exactly then)
    ContentBasedDeduplication  content_based_deduplication
    DeduplicationScope         deduplication_scope (queue | messageGroup)
    FifoThroughputLimit        throughput_limit (perQueue | perMessageGroupId)
"""

from __future__ import annotations

from typing import Any

from deadletter.api.sqs.errors import (
    SqsError,
    invalid_attribute_name,
    invalid_attribute_value,
    invalid_parameter,
    invalid_value,
    missing_parameter,
)
from deadletter.domain import errors
from deadletter.domain.model import (
    DEDUPLICATION_SCOPES,
    THROUGHPUT_LIMITS,
    Message,
    NewMessage,
    QueueSettings,
)
from deadletter.engine import check_fifo_id, sequence_number

SUFFIX = ".fifo"
_ID_REASON = "{name} can only include alphanumeric and punctuation characters. 1 to 128 in length."
ATTRIBUTES = ("FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit")
_CHOICES = {"DeduplicationScope": DEDUPLICATION_SCOPES, "FifoThroughputLimit": THROUGHPUT_LIMITS}
_FIELDS = {
    "FifoQueue": "fifo",
    "ContentBasedDeduplication": "content_based_deduplication",
    "DeduplicationScope": "deduplication_scope",
    "FifoThroughputLimit": "throughput_limit",
}


def changes(name: str, raw: str) -> dict[str, Any]:
    """The settings one FIFO attribute sets, its value checked."""
    if name in _CHOICES:
        if raw not in _CHOICES[name]:
            raise invalid_attribute_value(name)
        return {_FIELDS[name]: raw}
    if raw.lower() not in ("true", "false"):
        raise invalid_attribute_value(name)
    return {_FIELDS[name]: raw.lower() == "true"}


def check(
    name: str, before: QueueSettings | None, after: QueueSettings, given: dict[str, Any]
) -> None:
    """A queue's name and FIFO attributes agree, as on SQS: a FIFO queue's name ends in
    .fifo and a standard queue's does not; FIFO attributes are unknown to standard queues;
    FifoQueue is fixed by CreateQueue (`before` is None there)."""
    if before is not None and after.fifo != before.fifo:
        raise invalid_attribute_value("FifoQueue")
    if after.fifo and not name.endswith(SUFFIX):
        raise invalid_parameter(
            "The name of a FIFO queue can only include alphanumeric characters, hyphens, or"
            " underscores, must end with .fifo suffix and be 1 to 80 in length."
        )
    if not after.fifo and name.endswith(SUFFIX):
        raise invalid_parameter(
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"
        )
    if not after.fifo:
        for attribute in ATTRIBUTES[2:]:
            if attribute in given:
                raise SqsError(
                    "InvalidAttributeName",
                    f"You can specify the {attribute} only when FifoQueue is set to true.",
                )
        if ATTRIBUTES[1] in given:
            raise invalid_attribute_name(ATTRIBUTES[1])


def view(s: QueueSettings) -> dict[str, str]:
    """The FIFO attributes a FIFO queue shows (a standard queue shows none)."""
    if not s.fifo:
        return {}
    return {
        "FifoQueue": "true",
        "ContentBasedDeduplication": str(s.content_based_deduplication).lower(),
        "DeduplicationScope": s.deduplication_scope,
        "FifoThroughputLimit": s.throughput_limit,
    }


def fields(params: dict[str, Any]) -> tuple[str | None, str | None]:
    """MessageGroupId and MessageDeduplicationId of a send or batch entry."""
    out = []
    for name in ("MessageGroupId", "MessageDeduplicationId"):
        value = params.get(name)
        if value == "":
            value = None
        if value is not None and not isinstance(value, str):
            raise invalid_value(value, name, _ID_REASON.format(name=name))
        out.append(value)
    return out[0], out[1]


def check_send(new: NewMessage, params: dict[str, Any], s: QueueSettings) -> None:
    """What SQS refuses in a send before the engine sees it, so that one bad batch entry
    fails alone and a missing group id is a MissingParameter."""
    if s.fifo:
        if new.group_id is None:
            raise missing_parameter("MessageGroupId")
        if params.get("DelaySeconds") not in (None, "", 0, "0"):
            raise invalid_value(
                params["DelaySeconds"],
                "DelaySeconds",
                "The request include parameter that is not valid for this queue type.",
            )
        if new.deduplication_id is None and not s.content_based_deduplication:
            raise invalid_parameter(
                "The queue should either have ContentBasedDeduplication enabled or"
                " MessageDeduplicationId provided explicitly"
            )
    elif new.deduplication_id is not None:
        raise invalid_value(
            new.deduplication_id,
            "MessageDeduplicationId",
            "The request include parameter that is not valid for this queue type.",
        )
    for what, value in (("MessageGroupId", new.group_id), ("MessageDeduplicationId",
                        new.deduplication_id)):  # fmt: skip
        if value is None:
            continue
        try:
            check_fifo_id(what, value)
        except errors.InvalidInput:
            raise invalid_value(value, what, _ID_REASON.format(name=what)) from None


def system_attributes(m: Message) -> dict[str, str]:
    """The FIFO system attributes of a received message: a message of a FIFO queue always
    has a deduplication id; one of a standard queue may have a group id only."""
    out = {}
    if m.group_id is not None:
        out["MessageGroupId"] = m.group_id
    if m.deduplication_id is not None:
        out["MessageDeduplicationId"] = m.deduplication_id
        out["SequenceNumber"] = sequence_number(m)
    return out
