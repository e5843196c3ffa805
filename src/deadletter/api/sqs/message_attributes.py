"""SQS message attributes: checked as SQS checks them, selected as a receive asks for them,
and digested (MD5 of a body and of its attributes) as SQS digests them."""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
import struct
from typing import Any

from deadletter.api.sqs.errors import invalid_parameter, invalid_value, missing_parameter
from deadletter.api.strict_json import unknown_name
from deadletter.domain.model import RESERVED_ATTRIBUTE_PREFIX, Attribute

MAX_ATTRIBUTE_NAME = 256
# Message attribute names: letters, digits, `_ - .`, no leading, trailing or double period;
# `AWS.` and `Amazon.` (any case) belong to AWS.
ATTRIBUTE_NAME = re.compile(r"(?!\.)(?!.*\.\.)[A-Za-z0-9_.-]{1,256}(?<!\.)")
AWS_PREFIXES = ("aws.", "amazon.")
MAX_MESSAGE_ATTRIBUTES = 10
# The fields of a message attribute's value, as botocore's model names them.
ATTRIBUTE_VALUE_FIELDS = frozenset(
    {"DataType", "StringValue", "BinaryValue", "StringListValues", "BinaryListValues"}
)


def message_attributes_in(raw: Any) -> dict[str, Attribute]:
    """SQS MessageAttributes -> engine attributes (binary values stay base64)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise invalid_value("MessageAttributes", "MessageAttributes", "Must be a map.")
    if len(raw) > MAX_MESSAGE_ATTRIBUTES:
        raise invalid_parameter(
            f"Number of message attributes [{len(raw)}] exceeds the allowed maximum"
            f" [{MAX_MESSAGE_ATTRIBUTES}]."
        )
    return {name: _message_attribute(name, value) for name, value in raw.items()}


def _message_attribute(name: str, value: Any) -> Attribute:
    """One SQS message attribute, checked as SQS checks it."""
    check_attribute_name(name)
    if not isinstance(value, dict) or not isinstance(value.get("DataType"), str):
        raise missing_parameter(f"MessageAttributes.{name}.DataType")
    refused = unknown_name(value, ATTRIBUTE_VALUE_FIELDS, "message attribute field")
    if refused is not None:
        raise invalid_parameter(refused)
    data_type = value["DataType"]
    base = data_type.split(".", 1)[0]
    if len(data_type) > MAX_ATTRIBUTE_NAME:
        raise invalid_parameter("Message (user) attribute types must be shorter than 256 Bytes")
    if base not in ("String", "Number", "Binary") or data_type.endswith("."):
        raise invalid_parameter(
            f"Type for parameter MessageAttributes.{name}.DataType must be prefixed with"
            f' "String", "Binary", or "Number", but was: {data_type}'
        )
    kind = "Binary" if base == "Binary" else "String"
    content = value.get(f"{kind}Value")
    if not isinstance(content, str) or content == "":
        raise invalid_parameter(
            f"Message (user) attribute '{name}' must contain a non-empty value of type '{kind}'."
        )
    if base == "Binary":
        try:
            base64.b64decode(content, validate=True)
        except binascii.Error:
            raise invalid_parameter(
                f"Message (user) attribute '{name}' must contain a non-empty value of type"
                " 'Binary'."
            ) from None
    if base == "Number" and not _is_number(content):
        raise invalid_parameter(
            f"Can't cast the value of message (user) attribute '{name}' to a number."
        )
    return Attribute(data_type, content)


def check_attribute_name(name: str) -> None:
    """Message attribute names as SQS allows them; `DLQ.` is the engine's own prefix."""
    if len(name.encode()) >= MAX_ATTRIBUTE_NAME:
        raise invalid_parameter("Message (user) attribute names must be shorter than 256 Bytes")
    if not ATTRIBUTE_NAME.fullmatch(name) and not (name.startswith(".") or name.endswith(".")):
        raise invalid_parameter(
            "Message (user) attributes name can only contain upper and lower score characters,"
            " digits, periods, hyphens and underscores. "
        )
    lowered = name.lower()
    if not ATTRIBUTE_NAME.fullmatch(name) or lowered.startswith(AWS_PREFIXES):
        raise invalid_parameter(
            "You can't use message attribute names beginning with 'AWS.' or 'Amazon.'. These"
            " strings are reserved for internal use. Additionally, they cannot start or end"
            " with '.'."
        )
    if lowered.startswith(RESERVED_ATTRIBUTE_PREFIX.lower()):
        raise invalid_parameter(
            f"You can't use message attribute names beginning with"
            f" '{RESERVED_ATTRIBUTE_PREFIX}'. These strings are reserved for dead letters."
        )


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _binary(value: str) -> bytes:
    """The bytes of a stored Binary attribute. The SQS face stores only base64; a value that
    is not (the Zaqar face did not check, once) stands for its own UTF-8 bytes, so that a
    message that has been received can always be shown."""
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        return value.encode()


def message_attributes_out(attributes: dict[str, Attribute]) -> dict[str, dict[str, str]]:
    out = {}
    for name, a in attributes.items():
        if a.type.split(".", 1)[0] == "Binary":
            encoded = base64.b64encode(_binary(a.value)).decode()
            out[name] = {"DataType": a.type, "BinaryValue": encoded}
        else:
            out[name] = {"DataType": a.type, "StringValue": a.value}
    return out


def wanted(names: list[str], attributes: dict[str, Attribute]) -> dict[str, Attribute]:
    """The message attributes a receive asked for: `All`, `.*`, `prefix.*` or exact names."""
    picked = {}
    for name, value in attributes.items():
        for pattern in names:
            if (
                pattern in ("All", ".*")
                or pattern == name
                or (pattern.endswith(".*") and name.startswith(pattern[:-1]))
            ):
                picked[name] = value
                break
    return picked


def md5_of_body(body: str) -> str:
    return hashlib.md5(body.encode()).hexdigest()


def md5_of_bytes(body: bytes) -> str:
    """`md5_of_body` of a body already encoded as UTF-8."""
    return hashlib.md5(body).hexdigest()


def md5_of_attributes(attributes: dict[str, Attribute]) -> str | None:
    """AWS's digest: for each name in order, length-prefixed name, type, a transport byte
    (1 string, 2 binary) and length-prefixed value."""
    if not attributes:
        return None
    digest = hashlib.md5()
    for name in sorted(attributes):
        a = attributes[name]
        for text in (name, a.type):
            data = text.encode()
            digest.update(struct.pack(">I", len(data)) + data)
        if a.type.split(".", 1)[0] == "Binary":
            value = _binary(a.value)
            digest.update(b"\x02")
        else:
            value = a.value.encode()
            digest.update(b"\x01")
        digest.update(struct.pack(">I", len(value)) + value)
    return digest.hexdigest()
