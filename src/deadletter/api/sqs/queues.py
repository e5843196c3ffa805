"""SQS queue actions: create, find, list, delete, attributes, tags, purge, DLQ sources."""

from __future__ import annotations

import contextlib
from typing import Any

from deadletter.api.sqs import attributes as attrs
from deadletter.api.sqs import fifo as sqs_fifo
from deadletter.api.sqs.call import MAX_LIST, Call, decode_token, encode_token
from deadletter.api.sqs.errors import (
    SqsError,
    invalid_parameter,
    invalid_value,
    missing_parameter,
    queue_does_not_exist,
)
from deadletter.api.strict_json import InvalidJson, loads
from deadletter.domain import errors
from deadletter.domain.model import Queue, QueueSettings

MAX_TAGS = 50
MAX_TAG_KEY = 128
MAX_TAG_VALUE = 256
TAG_KEY_LENGTH = f"Tag keys must be between 1 and {MAX_TAG_KEY} characters in length."
TAG_VALUE_LENGTH = f"Tag values must be between 0 and {MAX_TAG_VALUE} characters in length."


def _tags(raw: Any, queue: str, required: bool = False) -> dict[str, str]:
    """Tags as SQS takes them: a map of 1-128 character keys to values of up to 256."""
    if raw is None or raw == {}:
        if required:
            raise missing_parameter("Tags")
        return {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise invalid_value("Tags", "Tags", "Must be a map of strings to strings.")
    if len(raw) > MAX_TAGS:
        raise invalid_parameter(f"Too many tags added for queue {queue}.")
    for key, value in raw.items():
        if not 1 <= len(key) <= MAX_TAG_KEY:
            raise invalid_parameter(TAG_KEY_LENGTH)
        if len(value) > MAX_TAG_VALUE:
            raise invalid_parameter(TAG_VALUE_LENGTH)
    return dict(raw)


def create_queue(call: Call) -> dict[str, Any]:
    name = call.text("QueueName")
    assert name is not None
    attrs.check_name(name)
    given = call.params.get("Attributes") or {}
    tags = _tags(call.params.get("tags") or call.params.get("Tags"), name)
    if not isinstance(given, dict):
        raise invalid_value("Attributes", "Attributes", "Must be a map.")
    given = attrs.named(given)
    if given.get("Policy") == "":  # as AWS: an empty policy is no policy
        given = {k: v for k, v in given.items() if k != "Policy"}
    defaults = QueueSettings(
        default_ttl=attrs.DEFAULT_RETENTION,
        max_ttl=attrs.DEFAULT_RETENTION,
        max_message_size=attrs.MAX_SIZE,
    )
    # Checked on SQS's defaults before anything is written; applied again below on top of
    # the matching template, so the attributes given win over the template's settings.
    sqs_fifo.check(name, None, attrs.apply(defaults, given, call.region, call.account), given)
    existing = call.engine.find_queue(call.project, name)
    if existing is not None:
        current = attrs.view(existing, None, call.region, call.account)
        current.setdefault("FifoQueue", "false")
        current = {**attrs.SOLACE_ABSENT, **current}
        for k, v in given.items():
            if current.get(k) != _canonical(k, v):
                raise SqsError(
                    "QueueNameExists",
                    "A queue already exists with the same name and a different value for"
                    f" attribute {k}",
                )
        return {"QueueUrl": call.url(name)}

    # Created meanwhile by another request: CreateQueue is idempotent.
    def build(templated: QueueSettings) -> QueueSettings:
        settings = attrs.apply(templated, given, call.region, call.account)
        return settings.with_changes(labels=tags)

    with contextlib.suppress(errors.QueueAlreadyExists):
        call.engine.templates.create_queue(call.project, name, build=build, base=defaults)
    return {"QueueUrl": call.url(name)}


def _canonical(name: str, value: Any) -> str:
    """An attribute value as `view` would show it, to compare with an existing queue."""
    if name in ("RedrivePolicy", "RedriveAllowPolicy") and isinstance(value, str) and value:
        try:
            doc = loads(value)
        except InvalidJson:
            return value
        if isinstance(doc, dict) and "maxReceiveCount" in doc:
            doc["maxReceiveCount"] = int(doc["maxReceiveCount"])
        return attrs.compact(doc)
    if name in (*sqs_fifo.ATTRIBUTES[:2], *attrs.SOLACE_FLAGS) and isinstance(value, str):
        return value.lower()
    return str(value)


def get_queue_url(call: Call) -> dict[str, Any]:
    name = call.text("QueueName")
    assert name is not None
    owner = call.text("QueueOwnerAWSAccountId", required=False)
    # Another account's queue is not shared here (policies are not enforced): none is found.
    if owner not in (None, call.account) or call.engine.find_queue(call.project, name) is None:
        raise queue_does_not_exist(name)
    return {"QueueUrl": call.url(name)}


def list_queues(call: Call) -> dict[str, Any]:
    prefix = call.text("QueueNamePrefix", required=False)
    limit = call.integer("MaxResults", 1, MAX_LIST)
    token = call.text("NextToken", required=False)
    after = decode_token(token) if token else None
    page = call.engine.list_queues(
        call.project, prefix=prefix, after=after, limit=(limit or MAX_LIST) + 1
    )
    # As SQS: no QueueUrls member at all when no queue matches.
    out: dict[str, Any] = {}
    if page:
        out["QueueUrls"] = [call.url(q.name) for q in page[: limit or MAX_LIST]]
    if limit is not None and len(page) > limit:
        out["NextToken"] = encode_token(page[limit - 1].name)
    return out


def delete_queue(call: Call) -> dict[str, Any]:
    """As on AWS, a DLQ that sources name is deleted too (their policies turn inactive)."""
    name = call.queue()
    if not call.engine.delete_queue(call.project, name, force=True):
        raise queue_does_not_exist(name)
    return {}


def get_queue_attributes(call: Call) -> dict[str, Any]:
    name = call.queue()
    queue = call.engine.get_queue(call.project, name)
    stats = call.engine.stats(call.project, name)
    available = attrs.view(queue, stats, call.region, call.account)
    return {"Attributes": attrs.select(call.attribute_names("AttributeNames"), available)}


def set_queue_attributes(call: Call) -> dict[str, Any]:
    name = call.queue()
    given = call.params.get("Attributes")
    if not isinstance(given, dict) or not given:
        raise missing_parameter("Attributes")
    given = attrs.named(given)

    def changed(queue: Queue) -> QueueSettings:
        settings = attrs.apply(queue.settings, given, call.region, call.account)
        sqs_fifo.check(name, queue.settings, settings, given)
        return settings

    call.engine.change_settings(call.project, name, change=changed)
    return {}


def tag_queue(call: Call) -> dict[str, Any]:
    name = call.queue()
    added = _tags(call.params.get("Tags"), name, required=True)

    def tagged(queue: Queue) -> QueueSettings:
        merged = {**queue.settings.labels, **added}
        if len(merged) > MAX_TAGS:
            raise invalid_parameter(f"Too many tags added for queue {name}.")
        return queue.settings.with_changes(labels=merged)

    call.engine.change_settings(call.project, name, change=tagged)
    return {}


def untag_queue(call: Call) -> dict[str, Any]:
    name = call.queue()
    keys = set(call.names("TagKeys"))
    if not keys or not all(1 <= len(k) <= MAX_TAG_KEY for k in keys):
        raise invalid_parameter(TAG_KEY_LENGTH)  # as SQS answers an empty TagKeys list
    call.engine.change_settings(
        call.project,
        name,
        change=lambda q: q.settings.with_changes(
            labels={k: v for k, v in q.settings.labels.items() if k not in keys}
        ),
    )
    return {}


def list_queue_tags(call: Call) -> dict[str, Any]:
    queue = call.engine.get_queue(call.project, call.queue())
    return {"Tags": dict(queue.settings.labels)} if queue.settings.labels else {}


def purge_queue(call: Call) -> dict[str, Any]:
    # AWS deletes and purges a DLQ that sources name without a word; so does this face
    # (the Zaqar face and the CLI want force for it, docs/sqs.md).
    call.engine.purge(call.project, call.queue(), force=True)
    return {}


def list_dead_letter_source_queues(call: Call) -> dict[str, Any]:
    name = call.queue()
    limit = call.integer("MaxResults", 1, MAX_LIST)
    token = call.text("NextToken", required=False)
    after = decode_token(token) if token else ""
    sources = [q for q in call.engine.dead_letter_sources(call.project, name) if q.name > after]
    page = sources[: limit or MAX_LIST]
    out: dict[str, Any] = {"queueUrls": [call.url(q.name) for q in page]}
    if limit is not None and len(sources) > limit:
        out["NextToken"] = encode_token(page[-1].name)
    return out
