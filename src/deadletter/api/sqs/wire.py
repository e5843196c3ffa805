"""SQS's two wire protocols around one set of handlers that take and return JSON-shaped dicts.

- JSON protocol (current botocore): `X-Amz-Target: AmazonSQS.<Action>`, the parameters are
  the JSON body, the result is the JSON body.
- Query protocol (older SDKs, the AWS CLI v1 with `--query-protocol`, curl): form fields such
  as `Attribute.1.Name`, `MessageAttribute.1.Value.StringValue` or
  `SendMessageBatchRequestEntry.2.Id`; `parse_query` turns them into the JSON shape, and
  `xml_response` writes a result in the XML botocore's query parser reads.
"""

from __future__ import annotations

import re
import uuid
from typing import Any
from xml.sax.saxutils import escape

from deadletter.api.sqs.errors import SqsError

SQS_NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/"
JSON_CONTENT_TYPE = "application/x-amz-json-1.0"

# Flattened query lists whose JSON name is not the query name plus "s".
_LIST_NAMES = {"Tag": "Tags", "TagKey": "TagKeys"}
_ENTRY = re.compile(r"^\w+RequestEntry$")


def parse_query(fields: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """(action, parameters in the JSON protocol's shape) of a query-protocol request."""
    action = fields.get("Action", "")
    tree: dict[str, Any] = {}
    for key, value in fields.items():
        if key in ("Action", "Version"):
            continue
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise SqsError("MalformedQueryString", f"Malformed parameter {key!r}.")
        node[parts[-1]] = value
    return action, _normalise(tree)


def _ordered(numbered: dict[str, Any]) -> list[Any]:
    """`{"1": a, "2": b}` -> [a, b] (a query list)."""
    try:
        return [v for _, v in sorted(numbered.items(), key=lambda kv: int(kv[0]))]
    except ValueError:
        raise SqsError("MalformedQueryString", "List members must be numbered.") from None


def _normalise(tree: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if key == "Attribute" and isinstance(value, dict):
            out["Attributes"] = {e.get("Name", ""): e.get("Value", "") for e in _ordered(value)}
        elif key == "MessageAttribute" and isinstance(value, dict):
            out["MessageAttributes"] = {
                e.get("Name", ""): _attribute_value(e.get("Value", {})) for e in _ordered(value)
            }
        elif key == "MessageSystemAttribute" and isinstance(value, dict):
            out["MessageSystemAttributes"] = {
                e.get("Name", ""): _attribute_value(e.get("Value", {})) for e in _ordered(value)
            }
        elif key == "Tag" and isinstance(value, dict):
            entries = _ordered(value)
            out["Tags"] = {e.get("Key", ""): e.get("Value", "") for e in entries}
        elif _ENTRY.match(key) and isinstance(value, dict):
            out["Entries"] = [_normalise(e) for e in _ordered(value)]
        elif isinstance(value, dict) and value and all(k.isdigit() for k in value):
            out[_LIST_NAMES.get(key, key + "s")] = _ordered(value)
        else:
            out[key] = value
    return out


def _attribute_value(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# XML results ---------------------------------------------------------------------------

# JSON list members -> the flattened XML element each one becomes.
_MEMBER = {
    "QueueUrls": "QueueUrl",
    "queueUrls": "QueueUrl",
    "Messages": "Message",
    "Failed": "BatchResultErrorEntry",
    "Results": "ListMessageMoveTasksResultEntry",
}


def _element(name: str, value: Any, action: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return f"<{name}>{str(value).lower()}</{name}>"
    if isinstance(value, dict):
        return f"<{name}>{_members(value, action)}</{name}>"
    if isinstance(value, list):
        return "".join(_element(name, v, action) for v in value)
    return f"<{name}>{escape(str(value))}</{name}>"


def _members(result: dict[str, Any], action: str) -> str:
    parts: list[str] = []
    for key, value in result.items():
        if key in ("Attributes", "Tags") and isinstance(value, dict):
            tag, k, v = (
                ("Attribute", "Name", "Value") if key == "Attributes" else ("Tag", "Key", "Value")
            )
            parts += [
                f"<{tag}><{k}>{escape(name)}</{k}><{v}>{escape(str(val))}</{v}></{tag}>"
                for name, val in value.items()
            ]
        elif key == "MessageAttributes" and isinstance(value, dict):
            for name, attribute in value.items():
                inner = _members(attribute, action)
                parts.append(
                    f"<MessageAttribute><Name>{escape(name)}</Name><Value>{inner}</Value>"
                    "</MessageAttribute>"
                )
        elif key == "Successful" and isinstance(value, list):
            parts.append(_element(f"{action}ResultEntry", value, action))
        elif isinstance(value, list):
            parts.append(_element(_MEMBER.get(key, key), value, action))
        else:
            parts.append(_element(key, value, action))
    return "".join(parts)


def xml_response(action: str, result: dict[str, Any], namespace: str = SQS_NAMESPACE) -> str:
    request_id = str(uuid.uuid4())
    body = f"<{action}Result>{_members(result, action)}</{action}Result>" if result else ""
    return (
        f'<?xml version="1.0"?><{action}Response xmlns="{namespace}">{body}'
        f"<ResponseMetadata><RequestId>{request_id}</RequestId></ResponseMetadata>"
        f"</{action}Response>"
    )


def xml_error(error: SqsError) -> str:
    kind = "Sender" if error.sender_fault else "Receiver"
    return (
        f'<?xml version="1.0"?><ErrorResponse xmlns="{SQS_NAMESPACE}"><Error>'
        f"<Type>{kind}</Type><Code>{escape(error.code)}</Code>"
        f"<Message>{escape(error.message)}</Message><Detail/></Error>"
        f"<RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>"
    )


def json_error(error: SqsError) -> tuple[dict[str, Any], dict[str, str]]:
    """(body, headers) of a JSON-protocol error."""
    kind = "Sender" if error.sender_fault else "Receiver"
    return (
        {"__type": f"com.amazonaws.sqs#{error.shape}", "message": error.message},
        {"x-amzn-query-error": f"{error.code};{kind}"},
    )
