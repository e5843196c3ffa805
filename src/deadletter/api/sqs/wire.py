"""SQS's two wire protocols around one set of handlers that take and return JSON-shaped dicts.

- JSON protocol (current botocore): `X-Amz-Target: AmazonSQS.<Action>`, the parameters are
  the JSON body, the result is the JSON body.
- Query protocol (older SDKs, the AWS CLI v1 with `--query-protocol`, curl): form fields such
  as `Attribute.1.Name`, `MessageAttribute.1.Value.StringValue` or
  `SendMessageBatchRequestEntry.2.Id`, in a POST body or a GET's query string;
  `parse_query` turns them into the JSON shape, and `xml_response` writes a result in the XML
  botocore's query parser reads.
"""

from __future__ import annotations

import itertools
import re
import uuid
from typing import Any
from xml.sax.saxutils import escape

from deadletter.api.sqs.errors import SqsError

SQS_NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/"
JSON_CONTENT_TYPE = "application/x-amz-json-1.0"

# Flattened query lists whose JSON name is not the query name plus "s".
_LIST_NAMES = {"Tag": "Tags", "TagKey": "TagKeys", "ActionName": "Actions"}
_ENTRY = re.compile(r"\w+RequestEntry")
# The query protocol's own fields, beside an action's parameters.
_PROTOCOL_FIELDS = frozenset(
    {
        "Action",
        "Version",
        "AWSAccessKeyId",
        "Signature",
        "SignatureMethod",
        "SignatureVersion",
        "Timestamp",
        "Expires",
        "SecurityToken",
    }
)


def parse_query(fields: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """(action, parameters in the JSON protocol's shape) of a query-protocol request."""
    action = fields.get("Action", "")
    tree: dict[str, Any] = {}
    for key, value in fields.items():
        # A presigned request's X-Amz-* fields are its signature, not the action's parameters,
        # nor are the fields of a signature in AWS's older scheme (version 2).
        if key in _PROTOCOL_FIELDS or key.startswith("X-Amz-"):
            continue
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise _malformed(key)
        if isinstance(node.get(parts[-1]), dict):  # `A.1=x` beside `A.1.Name=y`
            raise _malformed(key)
        node[parts[-1]] = value
    return action, _normalise(tree)


def _malformed(key: str) -> SqsError:
    return SqsError("MalformedQueryString", f"Malformed parameter {_shown(key)}.")


def _shown(text: str, limit: int = 80) -> str:
    """A client's text quoted in an error message, shortened."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _ordered(numbered: dict[str, Any]) -> list[Any]:
    """`{"1": a, "2": b}` -> [a, b] (a query list)."""
    try:
        return [v for _, v in sorted(numbered.items(), key=lambda kv: int(kv[0]))]
    except ValueError:
        raise SqsError("MalformedQueryString", "List members must be numbered.") from None


def _structures(key: str, numbered: dict[str, Any]) -> list[dict[str, Any]]:
    """The members of a flattened list of structures (`Attribute.1.Name`, ...); a member
    given as a plain value (`Attribute.1=foo`) is malformed."""
    members = _ordered(numbered)
    if not all(isinstance(m, dict) for m in members):
        raise SqsError(
            "MalformedQueryString", f"The members of {key} must be structures ({key}.N.<field>)."
        )
    return members


def _pairs(key: str, numbered: dict[str, Any], k: str, v: str) -> dict[str, Any]:
    """A flattened map (`Attribute.N.Name` / `Attribute.N.Value`) as a dict; a member without
    its key is missing a parameter."""
    out: dict[str, Any] = {}
    members = _structures(key, numbered)
    for index, member in zip(sorted(numbered, key=int), members, strict=True):
        name = member.get(k)
        if not isinstance(name, str) or not name:
            raise SqsError(
                "MissingParameter", f"The request must contain the parameter {key}.{index}.{k}."
            )
        out[name] = member.get(v, "")
    return out


def _normalise(tree: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if key == "Attribute" and isinstance(value, dict):
            out["Attributes"] = _pairs(key, value, "Name", "Value")
        elif key == "MessageAttribute" and isinstance(value, dict):
            pairs = _pairs(key, value, "Name", "Value")
            out["MessageAttributes"] = {n: _attribute_value(v) for n, v in pairs.items()}
        elif key == "MessageSystemAttribute" and isinstance(value, dict):
            pairs = _pairs(key, value, "Name", "Value")
            out["MessageSystemAttributes"] = {n: _attribute_value(v) for n, v in pairs.items()}
        elif key == "Tag" and isinstance(value, dict):
            out["Tags"] = _pairs(key, value, "Key", "Value")
        elif _ENTRY.fullmatch(key) and isinstance(value, dict):
            out["Entries"] = [_normalise(e) for e in _structures(key, value)]
        elif _numbered(value):
            # `AttributeName.1` (the model's flattened name) or `AttributeNames.1`
            plural = key if key.endswith("s") else key + "s"
            out[_LIST_NAMES.get(key, plural)] = _ordered(value)
        elif isinstance(value, dict) and set(value) == {"member"} and _numbered(value["member"]):
            # A list as a serializer writes one that is not flattened: `Names.member.1`.
            out[key] = _ordered(value["member"])
        else:
            out[key] = value
    return out


def _numbered(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(k.isdigit() for k in value)


def _attribute_value(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# Text ------------------------------------------------------------------------------------

# What XML 1.0 can carry, and so what SQS accepts in text: a NUL (which PostgreSQL cannot
# store either) or another control character would make every later answer that includes it
# unreadable, so it is refused before anything is written.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
MESSAGE_BODY = "MessageBody"  # its characters are checked by SendMessage, with its own code


def bad_character(text: str) -> str | None:
    """The first character of `text` that SQS refuses, if any."""
    found = _NOT_XML.search(text)
    return found.group() if found else None


def check_text(params: Any, path: str = "") -> None:
    """Refuse parameters (names and values, at any depth) holding characters SQS cannot
    carry; message bodies are left to SendMessage."""
    if _clean(params):
        return
    _refuse_text(params, path)


# The JSON escapes that can write a character SQS refuses: `\b` and `\f` (control
# characters) and `\uXXXX` (any character); every other escape writes one it takes.
_RISKY_ESCAPE = re.compile(rb"\\[bfu]")


def clean_json(body: bytes) -> bool:
    """Whether every text of a JSON body that parsed holds only characters SQS accepts, told
    from its bytes without walking what it parsed to: in ASCII JSON, a refused character (a
    control character) can only be written by an escape, as JSON refuses it raw in a string
    and anywhere else but as white space. boto3 writes its bodies in ASCII, escaping the
    rest. False only says to look (`check_text`); a false alarm (an escaped backslash before
    a `b`) costs that look, nothing else."""
    return body.isascii() and _RISKY_ESCAPE.search(body) is None


def _clean(params: Any) -> bool:
    """Whether no name or value in `params` holds a character SQS refuses (the common case,
    checked without building the parameters' names, in a loop rather than recursion)."""
    search = _NOT_XML.search
    todo = [params]
    while todo:
        node = todo.pop()
        if isinstance(node, str):
            if search(node) is not None:
                return False
        elif isinstance(node, dict):
            for key, value in node.items():
                todo.append(key)
                if key != MESSAGE_BODY:
                    todo.append(value)
        elif isinstance(node, list):
            todo.extend(node)
    return True


def _refuse_text(params: Any, path: str) -> None:
    """Raise for the first name or value that `check_text` refuses, named by its path."""
    if isinstance(params, str):
        char = bad_character(params)
        if char is not None:
            raise SqsError(
                "InvalidParameterValue",
                f"Value for parameter {safe_text(path[:100]) or '(request)'} contains the character"
                f" U+{ord(char):04X}, which is not allowed.",
            )
    elif isinstance(params, dict):
        for key, value in params.items():
            name = f"{path}.{key}" if path else str(key)
            _refuse_text(key, name)
            if key != MESSAGE_BODY:
                _refuse_text(value, name)
    elif isinstance(params, list):
        for index, value in enumerate(params, 1):
            _refuse_text(value, f"{path}.{index}")


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


# Actions that answer with no result element; every other one has its `<ActionResult>`, empty
# when there is nothing to list (a receive that got nothing, a queue without tags), as SQS
# writes it and as botocore's query parser looks for it.
_NO_RESULT = frozenset(
    {
        "AddPermission",
        "ChangeMessageVisibility",
        "DeleteMessage",
        "DeleteQueue",
        "PurgeQueue",
        "RemovePermission",
        "SetQueueAttributes",
        "TagQueue",
        "UntagQueue",
    }
)


# Request ids: a random UUID-shaped prefix per process and a counter, unique without the
# random bytes and formatting of a uuid4 on every request.
_REQUEST_PREFIX = str(uuid.uuid4())[:24]
_request_numbers = itertools.count(1)


def new_request_id() -> str:
    """The id of one answer, sent as `x-amzn-RequestId` and, in XML, as its RequestId, so
    that an SDK's `ResponseMetadata.RequestId` is set whichever protocol it speaks."""
    return f"{_REQUEST_PREFIX}{next(_request_numbers) % 16**12:012x}"


REQUEST_ID_HEADER = "x-amzn-RequestId"


def xml_response(
    action: str,
    result: dict[str, Any],
    namespace: str = SQS_NAMESPACE,
    request_id: str | None = None,
) -> str:
    request_id = request_id or new_request_id()
    body = (
        ""
        if action in _NO_RESULT and not result
        else f"<{action}Result>{_members(result, action)}</{action}Result>"
    )
    return (
        f'<?xml version="1.0"?><{action}Response xmlns="{namespace}">{body}'
        f"<ResponseMetadata><RequestId>{request_id}</RequestId></ResponseMetadata>"
        f"</{action}Response>"
    )


def safe_text(text: str) -> str:
    """`text` with what XML cannot carry replaced, for messages that quote a client."""
    return _NOT_XML.sub("\ufffd", text)


def xml_error(error: SqsError, request_id: str | None = None) -> str:
    kind = "Sender" if error.sender_fault else "Receiver"
    return (
        f'<?xml version="1.0"?><ErrorResponse xmlns="{SQS_NAMESPACE}"><Error>'
        f"<Type>{kind}</Type><Code>{escape(safe_text(error.code))}</Code>"
        f"<Message>{escape(safe_text(error.query_message))}</Message><Detail/></Error>"
        f"<RequestId>{request_id or new_request_id()}</RequestId></ErrorResponse>"
    )


def json_error(
    error: SqsError, request_id: str | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """(body, headers) of a JSON-protocol error."""
    kind = "Sender" if error.sender_fault else "Receiver"
    return (
        {"__type": f"com.amazonaws.sqs#{error.shape}", "message": safe_text(error.message)},
        {
            "x-amzn-query-error": f"{error.code};{kind}",
            REQUEST_ID_HEADER: request_id or new_request_id(),
        },
    )
