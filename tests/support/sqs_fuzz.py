"""Requests for the SQS face built from botocore's service model, then mutated (a seeded fuzzer).

`valid(op, rng, pool)` builds parameters a real client could send for one operation, with
values from `Pool` (the fuzz queues, real receipt handles, ARNs); `mutate` damages them in the
JSON shape (dropped, duplicated or retyped members, huge strings, NUL, bad numbers, wrong
nesting); `json_request` and `query_request` write them in either protocol, each with damage
of its own (raw NaN / surrogates / deep nesting in JSON, corrupted flattened keys and invalid
UTF-8 in query forms). Every case is a `Case`: method-free, ready for `client.post`.
`Sentinel` is a message on a queue no request names, to show that a bad request harmed
nothing else.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import botocore.session
from botocore.model import OperationModel, Shape

from deadletter.domain.model import Attribute, NewMessage, QueueSettings
from deadletter.engine.engine import Engine

ACCOUNT = "123456789012"
SENTINEL = "sentinel"
TARGET_PREFIX = "AmazonSQS."
JSON_CONTENT_TYPE = "application/x-amz-json-1.0"
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
MODEL = botocore.session.get_session().get_service_model("sqs")

# Flattened names of the query protocol (the JSON model no longer carries them).
_QUERY_MAPS = {
    "Attributes": ("Attribute", "Name", "Value"),
    "MessageAttributes": ("MessageAttribute", "Name", "Value"),
    "MessageSystemAttributes": ("MessageSystemAttribute", "Name", "Value"),
    "tags": ("Tag", "Key", "Value"),
    "Tags": ("Tag", "Key", "Value"),
}
_QUERY_LISTS = {
    "AttributeNames": "AttributeName",
    "MessageAttributeNames": "MessageAttributeName",
    "MessageSystemAttributeNames": "MessageSystemAttributeName",
    "TagKeys": "TagKey",
    "QueueUrls": "QueueUrl",
}

_HUGE = 100_000
_ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**31,
    2**63,
    10**30,
    -(10**30),
    1.5,
    1e308,
    "",
    " ",
    "a\x00b",
    "\x00",
    "\x01\x02",
    "\ufffe",
    "-5",
    "1e3",
    "99999999999999999999999",
    "NaN",
    "Infinity",
    "%",
    "&=&",
    "é漢字🙂",
    [],
    {},
    [1, 2],
    {"k": "v"},
    {"DataType": "String"},
]
_RAW_JSON = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    '"\\ud800"',
    '"\\udc00x"',
    '"\\u0000"',
    "[" * 5_000 + "]" * 5_000,
    "{" + '"a":{' * 3_000 + "}" * 3_001,
    "123456789" * 600,
]


@dataclass
class Pool:
    """Realistic values the generator draws from, by member name."""

    base_url: str
    account: str
    region: str
    queues: list[str]
    dlq: str
    handles: list[str] = field(default_factory=list)

    def url(self, name: str) -> str:
        return f"{self.base_url}/{self.account}/{name}"

    def arn(self, name: str) -> str:
        return f"arn:aws:sqs:{self.region}:{self.account}:{name}"


@dataclass
class Case:
    """One request: path, headers and raw body, and a short description for failures."""

    action: str
    protocol: str
    body: bytes
    headers: dict[str, str]
    path: str = "/"
    story: list[str] = field(default_factory=list)

    def describe(self) -> str:
        shown = self.body[:300]
        return f"{self.protocol} {self.action} {self.path} {self.story}: {shown!r}"


def operations(implemented: set[str]) -> list[OperationModel]:
    return [MODEL.operation_model(n) for n in sorted(MODEL.operation_names) if n in implemented]


@dataclass(frozen=True)
class Sentinel:
    message_id: str
    state: object
    settings: QueueSettings

    @classmethod
    def plant(cls, engine: Engine) -> Sentinel:
        engine.create_queue(
            ACCOUNT, SENTINEL, settings=QueueSettings(default_ttl=3600, max_ttl=3600)
        )
        (sent,) = engine.send(
            ACCOUNT,
            SENTINEL,
            messages=[NewMessage(body=b"untouched", attributes={"a": Attribute("String", "1")})],
        )
        return cls(sent.id, cls.read(engine, sent.id), engine.get_queue(ACCOUNT, SENTINEL).settings)

    @staticmethod
    def read(engine: Engine, message_id: str) -> object:
        return engine.get_messages(ACCOUNT, SENTINEL, ids=[message_id])

    def check(self, engine: Engine, after: str) -> None:
        assert self.read(engine, self.message_id) == self.state, f"sentinel changed after {after}"
        assert engine.get_queue(ACCOUNT, SENTINEL).settings == self.settings, after


# Valid requests ----------------------------------------------------------------------------


def _attribute_value(rng: random.Random, pool: Pool, name: str) -> str:
    values = {
        "VisibilityTimeout": str(rng.randint(0, 60)),
        "DelaySeconds": str(rng.randint(0, 5)),
        "MaximumMessageSize": str(rng.randint(1_024, 262_144)),
        "MessageRetentionPeriod": str(rng.randint(60, 1_209_600)),
        "ReceiveMessageWaitTimeSeconds": "0",
        "RedrivePolicy": json.dumps(
            {"deadLetterTargetArn": pool.arn(pool.dlq), "maxReceiveCount": rng.randint(1, 5)}
        ),
        "RedriveAllowPolicy": json.dumps({"redrivePermission": "allowAll"}),
        "Policy": json.dumps({"Version": "2012-10-17", "Statement": []}),
        "KmsDataKeyReusePeriodSeconds": "300",
        "SqsManagedSseEnabled": rng.choice(["true", "false"]),
        "KmsMasterKeyId": "alias/aws/sqs",
    }
    return values.get(name, "x")


def _message_attribute(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(["String", "Number", "Binary", "String.custom", "Number.int"])
    if kind.startswith("Binary"):
        return {"DataType": kind, "BinaryValue": base64.b64encode(rng.randbytes(8)).decode()}
    value = str(rng.randint(-100, 100)) if kind.startswith("Number") else _word(rng)
    return {"DataType": kind, "StringValue": value}


def _word(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def _string(rng: random.Random, pool: Pool, name: str, shape: Shape) -> str:
    queue = rng.choice(pool.queues)
    by_name = {
        "QueueUrl": pool.url(queue),
        "QueueName": rng.choice([*pool.queues, "fuzz-new", _word(rng)]),
        "QueueNamePrefix": rng.choice(["fuzz", "", "f"]),
        "ReceiptHandle": rng.choice(pool.handles) if pool.handles else "x",
        "SourceArn": pool.arn(pool.dlq),
        "DestinationArn": pool.arn(queue),
        "MessageBody": rng.choice(["hello", '{"json": true}', "é漢字🙂", "x" * 1000]),
        "Id": _word(rng, 4),
        "NextToken": base64.urlsafe_b64encode(queue.encode()).decode(),
        "TaskHandle": base64.b64encode(
            json.dumps({"taskId": _word(rng), "sourceArn": pool.arn(pool.dlq)}).encode()
        ).decode(),
    }
    if name in by_name:
        return by_name[name]
    enum = getattr(shape, "enum", None)
    if enum:
        return str(rng.choice(enum))
    return _word(rng)


def _integer(rng: random.Random, name: str) -> int:
    ranges = {
        "MaxNumberOfMessages": (1, 10),
        "VisibilityTimeout": (0, 60),
        "WaitTimeSeconds": (0, 0),
        "DelaySeconds": (0, 5),
        "MaxResults": (1, 10),
        "MaxNumberOfMessagesPerSecond": (1, 500),
    }
    low, high = ranges.get(name, (0, 10))
    return rng.randint(low, high)


def _value(rng: random.Random, pool: Pool, name: str, shape: Shape) -> Any:
    kind = shape.type_name
    if kind == "structure":
        out: dict[str, Any] = {}
        required = set(shape.required_members)
        for member, member_shape in shape.members.items():
            if member in required or rng.random() < 0.6:
                out[member] = _value(rng, pool, member, member_shape)
        return out
    if kind == "list":
        if name == "Entries":
            count = rng.randint(1, 3)
            entries = [_value(rng, pool, "Entry", shape.member) for _ in range(count)]
            for index, entry in enumerate(entries):
                entry["Id"] = f"e{index}"
            return entries
        return [_value(rng, pool, name, shape.member) for _ in range(rng.randint(1, 3))]
    if kind == "map":
        keys = [_string(rng, pool, "key", shape.key) for _ in range(rng.randint(1, 2))]
        if name == "Attributes":
            return {k: _attribute_value(rng, pool, k) for k in keys}
        if name == "MessageAttributes":
            return {_word(rng): _message_attribute(rng) for _ in keys}
        if name == "MessageSystemAttributes":
            return {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-x"}}
        return {_word(rng): _word(rng) for _ in keys}
    if kind == "integer":
        return _integer(rng, name)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "blob":
        return base64.b64encode(rng.randbytes(8)).decode()
    return _string(rng, pool, name, shape)


def valid(op: OperationModel, rng: random.Random, pool: Pool) -> dict[str, Any]:
    params: dict[str, Any] = _value(rng, pool, op.name, op.input_shape)
    return params


# Mutations in the JSON shape ---------------------------------------------------------------


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.append((*prefix, key))
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out.append((*prefix, index))
            out += _paths(value, (*prefix, index))
    return out


def _parent(params: Any, path: tuple[Any, ...]) -> Any:
    node = params
    for step in path[:-1]:
        node = node[step]
    return node


def mutate(params: dict[str, Any], rng: random.Random, story: list[str]) -> dict[str, Any]:
    """`params` damaged once in a random place (in place; also returned)."""
    paths = _paths(params)
    if not paths:
        params[_word(rng)] = rng.choice(_ODD_VALUES)
        story.append("add")
        return params
    path = rng.choice(paths)
    parent = _parent(params, path)
    key = path[-1]
    how = rng.choice(["drop", "duplicate", "retype", "huge", "nul", "nest", "rename", "number"])
    story.append(f"{how}@{'.'.join(map(str, path))}")
    if how == "drop":
        del parent[key]
    elif how == "duplicate" and isinstance(parent, list):
        parent.append(json.loads(json.dumps(parent[key])))
    elif how == "duplicate" and isinstance(parent, dict):
        parent[f"{key}{rng.choice(['', '2', '.1'])}"] = parent[key]
    elif how == "retype":
        parent[key] = rng.choice(_ODD_VALUES)
    elif how == "huge":
        parent[key] = rng.choice(["x", "é", "\x00", "a.", "1"]) * _HUGE
    elif how == "nul":
        parent[key] = f"{parent[key]}\x00" if isinstance(parent[key], str) else "\x00"
    elif how == "nest":
        parent[key] = rng.choice([[parent[key]], {"member": parent[key]}, [[parent[key]]]])
    elif how == "rename" and isinstance(parent, dict):
        value = parent.pop(key)
        parent[rng.choice([str(key).lower(), f"{key}\x00", "", f"AWS.{key}", "DLQ.x"])] = value
    else:
        parent[key] = rng.choice([-1, -(2**63), 2**64, 10**100, 0, 1e-9, -0.0, "0x10", "1_000"])
    return params


# Wire forms --------------------------------------------------------------------------------


def json_request(action: str, params: Any, rng: random.Random, story: list[str]) -> Case:
    """A JSON-protocol request; sometimes the body itself is damaged."""
    raw: str | None = None
    if rng.random() < 0.15 and isinstance(params, dict):
        paths = _paths(params)
        if paths:
            path = rng.choice(paths)
            _parent(params, path)[path[-1]] = "__RAW__"
            raw = rng.choice(_RAW_JSON)
            story.append(f"raw@{'.'.join(map(str, path))}")
    text = json.dumps(params)
    if raw is not None:
        text = text.replace('"__RAW__"', raw, 1)
    body = text.encode("utf-8", errors="surrogatepass")
    damage = rng.random()
    if damage < 0.04:
        body = body[: rng.randint(0, len(body))]
        story.append("truncated")
    elif damage < 0.07:
        body = body.replace(b'"', b'"\xff', 1)
        story.append("bad-utf8")
    elif damage < 0.09:
        body = json.dumps([params]).encode()
        story.append("array")
    headers = {"X-Amz-Target": TARGET_PREFIX + action, "Content-Type": JSON_CONTENT_TYPE}
    return Case(action, "json", body, headers, story=story)


def _join(*parts: object) -> str:
    return ".".join(str(p) for p in parts if p != "")


def _flatten(parent: str, name: str, value: Any, out: list[tuple[str, str]]) -> None:
    """Fields of one parameter as the query protocol writes them; anything is written,
    whatever its type, so that damage in the JSON shape reaches the form too."""
    if isinstance(value, dict) and name in _QUERY_MAPS:
        member, k, v = _QUERY_MAPS[name]
        for index, (key, item) in enumerate(value.items(), 1):
            out.append((_join(parent, member, index, k), str(key)))
            _flatten(_join(parent, member, index), v, item, out)
    elif isinstance(value, dict):
        for key, item in value.items():
            _flatten(_join(parent, name), str(key), item, out)
    elif isinstance(value, list):
        for index, item in enumerate(value, 1):
            _flatten(_join(parent, _QUERY_LISTS.get(name, name)), str(index), item, out)
    elif isinstance(value, bool):
        out.append((_join(parent, name), str(value).lower()))
    else:
        out.append((_join(parent, name), "" if value is None else str(value)))


def query_fields(action: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = [("Action", action), ("Version", "2012-11-05")]
    for name, value in params.items():
        if name == "Entries" and isinstance(value, list):
            for index, entry in enumerate(value, 1):
                _flatten(f"{action}RequestEntry", str(index), entry, out)
        else:
            _flatten("", name, value, out)
    return out


def _corrupt_key(key: str, rng: random.Random) -> str:
    parts = key.split(".")
    choice = rng.randrange(6)
    if choice == 0 and len(parts) > 1:
        return ".".join(parts[:-1])  # `Attribute.1.Name` -> `Attribute.1`
    if choice == 1:
        digits = [i for i, p in enumerate(parts) if p.isdigit()]
        if digits:
            parts[rng.choice(digits)] = rng.choice(["x", "0", "-1", "", "99999999999999999999"])
            return ".".join(parts)
    if choice == 2:
        return key + rng.choice([".foo", ".1", ".", ".1.Name"])
    if choice == 3:
        return "." + key
    if choice == 4:
        return key[: rng.randint(0, len(key))]
    return key.replace(".", "..", 1)


def query_request(
    action: str, params: dict[str, Any], rng: random.Random, story: list[str]
) -> Case:
    """A query-protocol form; sometimes its fields or its bytes are damaged."""
    fields = query_fields(action, params)
    for _ in range(rng.choice([0, 1, 1, 2])):
        index = rng.randrange(len(fields))
        key, value = fields[index]
        how = rng.choice(["key", "drop", "dup", "value"])
        story.append(f"q-{how}@{key}")
        if how == "key":
            fields[index] = (_corrupt_key(key, rng), value)
        elif how == "drop":
            del fields[index]
        elif how == "dup":
            fields.append((key, rng.choice(["", "x", "\x00", value + value])))
        else:
            fields[index] = (key, str(rng.choice(_ODD_VALUES)))
    body = "&".join(
        f"{quote(k, safe='', errors='surrogatepass')}={quote(v, safe='', errors='surrogatepass')}"
        for k, v in fields
    ).encode()
    damage = rng.random()
    if damage < 0.04:
        body += b"&Odd=\xff\xfe"
        story.append("bad-utf8")
    elif damage < 0.07:
        body += rng.choice([b"&%FF%FE=%C3", b"&&&==&", b"&noequals", b"&%00=%00"])
        story.append("odd-form")
    headers = {"Content-Type": FORM_CONTENT_TYPE}
    return Case(action, "query", body, headers, story=story)
