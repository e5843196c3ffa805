"""Message system attributes a sender sets (`AWSTraceHeader`), kept with the message and
shown back only as a system attribute."""

from __future__ import annotations

from typing import Any

from deadletter.api.sqs.errors import invalid_parameter
from deadletter.api.sqs.message_attributes import MAX_ATTRIBUTE_NAME
from deadletter.domain.model import Attribute

TRACE_HEADER = "AWSTraceHeader"
# Where the trace header is kept: a message attribute under a name that SQS clients cannot
# send (`AWS.` names are AWS's own), so it never shows among their MessageAttributes.
STORED_TRACE_HEADER = "aws.AWSTraceHeader"
MAX_TRACE_HEADER = 8_192  # the value's bytes


def system_attributes_in(raw: Any) -> dict[str, Attribute]:
    """SendMessage's MessageSystemAttributes as the message attributes that store them."""
    if raw is None or raw == {}:
        return {}
    if not isinstance(raw, dict):
        raise invalid_parameter("MessageSystemAttributes must be a map.")
    out: dict[str, Attribute] = {}
    for name, value in raw.items():
        if name != TRACE_HEADER:
            raise invalid_parameter(
                f"Message system attribute name {str(name)[:MAX_ATTRIBUTE_NAME]!r} is"
                f" invalid; the only one a sender can set is {TRACE_HEADER}."
            )
        if not isinstance(value, dict) or value.get("DataType") != "String":
            raise invalid_parameter(f"The message system attribute {name} must be a String.")
        text = value.get("StringValue")
        if not isinstance(text, str) or text == "":
            raise invalid_parameter(
                f"The message system attribute {name} must use field 'StringValue'."
            )
        if len(text.encode()) > MAX_TRACE_HEADER:
            raise invalid_parameter(
                f"The message system attribute {name} must be at most {MAX_TRACE_HEADER} bytes."
            )
        out[STORED_TRACE_HEADER] = Attribute("String", text)
    return out


def split(stored: dict[str, Attribute]) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """(the sender's message attributes, the system attributes by their SQS names) of what
    a message stores."""
    if not stored:  # most messages: nothing to split
        return {}, {}
    user = {k: v for k, v in stored.items() if k != STORED_TRACE_HEADER}
    system = {TRACE_HEADER: stored[STORED_TRACE_HEADER]} if STORED_TRACE_HEADER in stored else {}
    return user, system
