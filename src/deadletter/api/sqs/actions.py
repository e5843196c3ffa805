"""SQS actions: each takes the request's parameters in the JSON protocol's shape and returns
the result in that shape; `wire` turns both into either protocol.

All are synchronous except ReceiveMessage, which long-polls on the event loop.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool

from deadletter.api.notify import Notifier, wait_for
from deadletter.api.sqs import attributes as attrs
from deadletter.api.sqs.errors import (
    SqsError,
    batch_error,
    from_engine,
    invalid_parameter,
    missing_parameter,
    queue_does_not_exist,
    receipt_handle_invalid,
)
from deadletter.domain import errors
from deadletter.domain.model import (
    MAX_MESSAGE_SIZE,
    SOURCE_QUEUE_ATTRIBUTE,
    Message,
    NewMessage,
    Queue,
    QueueSettings,
    RedriveTask,
    TaskStatus,
)
from deadletter.engine.engine import Engine

MAX_BATCH = 10
MAX_WAIT = 20
MAX_LIST = 1000
SYSTEM_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "SentTimestamp",
    "SenderId",
    "DeadLetterQueueSourceArn",
)


@dataclass
class Call:
    """One SQS request as an action sees it."""

    engine: Engine
    notifier: Notifier
    params: dict[str, Any]
    account: str
    region: str
    base_url: str
    path_queue: str | None = None  # the query protocol may POST to the queue's URL

    def text(self, name: str, required: bool = True) -> str | None:
        value = self.params.get(name)
        if value is None or value == "":
            if required:
                raise missing_parameter(name)
            return None
        if not isinstance(value, str):
            raise invalid_parameter(f"{name} must be a string.")
        return value

    def integer(self, name: str, low: int, high: int, default: int | None = None) -> int | None:
        raw = self.params.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(str(raw))
        except ValueError:
            raise invalid_parameter(f"Value {raw} for parameter {name} is invalid.") from None
        if not low <= value <= high:
            raise invalid_parameter(
                f"Value {value} for parameter {name} is invalid. Reason: Must be between"
                f" {low} and {high}."
            )
        return value

    def names(self, name: str) -> list[str]:
        value = self.params.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise invalid_parameter(f"{name} must be a list of strings.")
        return value

    def queue(self) -> str:
        """The queue's name from QueueUrl (a URL or a bare name) or the request path."""
        url = self.text("QueueUrl", required=self.path_queue is None)
        if url is None:
            assert self.path_queue is not None
            return self.path_queue
        parts = [p for p in url.split("://", 1)[-1].split("/")[1:] if p] if "://" in url else []
        if "://" not in url:
            parts = [p for p in url.split("/") if p]
        if not parts:
            raise queue_does_not_exist(url)
        if len(parts) >= 2 and parts[-2] != self.account:
            raise queue_does_not_exist(url)
        return parts[-1]

    def url(self, name: str) -> str:
        return f"{self.base_url}/{self.account}/{name}"

    def arn(self, name: str) -> str:
        return attrs.arn(self.region, self.account, name)


Action = Callable[[Call], dict[str, Any]]


# Queues


def create_queue(call: Call) -> dict[str, Any]:
    name = call.text("QueueName")
    assert name is not None
    attrs.check_name(name)
    given = call.params.get("Attributes") or {}
    tags = call.params.get("tags") or call.params.get("Tags") or {}
    if not isinstance(given, dict) or not isinstance(tags, dict):
        raise invalid_parameter("Attributes and tags must be maps.")
    defaults = QueueSettings(default_ttl=attrs.DEFAULT_RETENTION, max_ttl=attrs.DEFAULT_RETENTION)
    settings = attrs.apply(defaults, given, call.region, call.account)
    settings = settings.with_changes(tags={str(k): str(v) for k, v in tags.items()})
    existing = call.engine.find_queue(call.account, name)
    if existing is not None:
        current = attrs.view(existing, None, call.region, call.account)
        if any(current.get(k) != _canonical(k, v) for k, v in given.items()):
            raise SqsError(
                "QueueNameExists",
                f"A queue already exists with the same name and a different value for"
                f" attribute(s) {', '.join(sorted(given))}.",
                "QueueAlreadyExists",
            )
        return {"QueueUrl": call.url(name)}
    # Created meanwhile by another request: CreateQueue is idempotent.
    with contextlib.suppress(errors.QueueAlreadyExists):
        call.engine.create_queue(call.account, name, settings)
    return {"QueueUrl": call.url(name)}


def _canonical(name: str, value: Any) -> str:
    """An attribute value as `view` would show it, to compare with an existing queue."""
    if name in ("RedrivePolicy", "RedriveAllowPolicy") and isinstance(value, str) and value:
        try:
            doc = json.loads(value)
        except ValueError:
            return value
        if "maxReceiveCount" in doc:
            doc["maxReceiveCount"] = int(doc["maxReceiveCount"])
        return json.dumps(doc)
    return str(value)


def get_queue_url(call: Call) -> dict[str, Any]:
    name = call.text("QueueName")
    assert name is not None
    if call.engine.find_queue(call.account, name) is None:
        raise queue_does_not_exist(name)
    return {"QueueUrl": call.url(name)}


def list_queues(call: Call) -> dict[str, Any]:
    prefix = call.text("QueueNamePrefix", required=False)
    limit = call.integer("MaxResults", 1, MAX_LIST)
    token = call.text("NextToken", required=False)
    after = _decode_token(token) if token else None
    page = call.engine.list_queues(call.account, prefix, after, (limit or MAX_LIST) + 1)
    out: dict[str, Any] = {"QueueUrls": [call.url(q.name) for q in page[: limit or MAX_LIST]]}
    if limit is not None and len(page) > limit:
        out["NextToken"] = _encode_token(page[limit - 1].name)
    return out


def _encode_token(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode()


def _decode_token(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token.encode()).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise invalid_parameter("Invalid NextToken.") from None


def delete_queue(call: Call) -> dict[str, Any]:
    name = call.queue()
    if not call.engine.delete_queue(call.account, name):
        raise queue_does_not_exist(name)
    return {}


def get_queue_attributes(call: Call) -> dict[str, Any]:
    name = call.queue()
    queue = call.engine.get_queue(call.account, name)
    stats = call.engine.stats(call.account, name)
    available = attrs.view(queue, stats, call.region, call.account)
    return {"Attributes": attrs.select(call.names("AttributeNames"), available)}


def set_queue_attributes(call: Call) -> dict[str, Any]:
    name = call.queue()
    given = call.params.get("Attributes")
    if not isinstance(given, dict):
        raise missing_parameter("Attributes")
    call.engine.change_settings(
        call.account, name, lambda q: attrs.apply(q.settings, given, call.region, call.account)
    )
    return {}


def tag_queue(call: Call) -> dict[str, Any]:
    name = call.queue()
    tags = call.params.get("Tags")
    if not isinstance(tags, dict) or not tags:
        raise missing_parameter("Tags")
    added = {str(k): str(v) for k, v in tags.items()}

    def tagged(queue: Queue) -> QueueSettings:
        merged = {**queue.settings.tags, **added}
        if len(merged) > 50:
            raise invalid_parameter("A queue can have at most 50 tags.")
        return queue.settings.with_changes(tags=merged)

    call.engine.change_settings(call.account, name, tagged)
    return {}


def untag_queue(call: Call) -> dict[str, Any]:
    name = call.queue()
    keys = set(call.names("TagKeys"))
    call.engine.change_settings(
        call.account,
        name,
        lambda q: q.settings.with_changes(
            tags={k: v for k, v in q.settings.tags.items() if k not in keys}
        ),
    )
    return {}


def list_queue_tags(call: Call) -> dict[str, Any]:
    queue = call.engine.get_queue(call.account, call.queue())
    return {"Tags": dict(queue.settings.tags)} if queue.settings.tags else {}


def purge_queue(call: Call) -> dict[str, Any]:
    call.engine.purge(call.account, call.queue())
    return {}


def list_dead_letter_source_queues(call: Call) -> dict[str, Any]:
    name = call.queue()
    limit = call.integer("MaxResults", 1, MAX_LIST)
    token = call.text("NextToken", required=False)
    after = _decode_token(token) if token else ""
    sources = [q for q in call.engine.dead_letter_sources(call.account, name) if q.name > after]
    page = sources[: limit or MAX_LIST]
    out: dict[str, Any] = {"queueUrls": [call.url(q.name) for q in page]}
    if limit is not None and len(sources) > limit:
        out["NextToken"] = _encode_token(page[-1].name)
    return out


# Messages


def _new_message(params: dict[str, Any]) -> NewMessage:
    body = params.get("MessageBody")
    if not isinstance(body, str) or body == "":
        raise missing_parameter("MessageBody")
    _check_body(body)
    delay = params.get("DelaySeconds")
    if delay is not None and delay != "":
        try:
            delay = int(str(delay))
        except ValueError:
            raise invalid_parameter(
                f"Value {delay} for parameter DelaySeconds is invalid."
            ) from None
        if not 0 <= delay <= 900:
            raise invalid_parameter(
                f"Value {delay} for parameter DelaySeconds is invalid. Reason: Must be between"
                " 0 and 900."
            )
    else:
        delay = None
    return NewMessage(
        body=body.encode(),
        delay=delay,
        attributes=attrs.message_attributes_in(params.get("MessageAttributes")),
    )


def _check_body(body: str) -> None:
    """SQS accepts only #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000+."""
    for ch in body:
        code = ord(ch)
        if not (
            code in (0x9, 0xA, 0xD)
            or 0x20 <= code <= 0xD7FF
            or 0xE000 <= code <= 0xFFFD
            or code >= 0x10000
        ):
            raise SqsError(
                "InvalidMessageContents",
                f"Invalid characters found. The message body contains U+{code:04X}.",
            )


def _sent(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {
        "MessageId": m.id,
        "MD5OfMessageBody": attrs.md5_of_body(m.body.decode()),
    }
    digest = attrs.md5_of_attributes(m.attributes)
    if digest:
        out["MD5OfMessageAttributes"] = digest
    return out


def _size_check(message: NewMessage, queue_max: int) -> None:
    size = len(message.body) + sum(
        len(k) + len(a.type) + len(a.value) for k, a in message.attributes.items()
    )
    if size > min(queue_max, MAX_MESSAGE_SIZE):
        raise invalid_parameter(
            f"One or more parameters are invalid. Reason: Message must be shorter than"
            f" {queue_max} bytes."
        )


def send_message(call: Call) -> dict[str, Any]:
    name = call.queue()
    new = _new_message(call.params)
    queue = call.engine.get_queue(call.account, name)
    _size_check(new, queue.settings.max_message_size)
    (stored,) = call.engine.send(call.account, name, [new])
    return _sent(stored)


def _entries(call: Call) -> list[dict[str, Any]]:
    entries = call.params.get("Entries")
    if not entries:
        raise batch_error("EmptyBatchRequest", "There should be at least one entry in the request.")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise invalid_parameter("Entries must be a list of objects.")
    if len(entries) > MAX_BATCH:
        raise batch_error(
            "TooManyEntriesInBatchRequest",
            f"Maximum number of entries per request are {MAX_BATCH}. You have sent {len(entries)}.",
        )
    ids = [e.get("Id") for e in entries]
    for entry_id in ids:
        if (
            not isinstance(entry_id, str)
            or not entry_id
            or len(entry_id) > 80
            or not all(c.isalnum() or c in "-_" for c in entry_id)
        ):
            raise batch_error(
                "InvalidBatchEntryId",
                "A batch entry id can only contain alphanumeric characters, hyphens and"
                " underscores. It can be at most 80 letters long.",
            )
    if len(set(ids)) != len(ids):
        raise batch_error("BatchEntryIdsNotDistinct", "Two or more batch entries have the same Id.")
    return entries


def _failure(entry_id: str, error: SqsError) -> dict[str, Any]:
    return {
        "Id": entry_id,
        "SenderFault": error.sender_fault,
        "Code": error.code,
        "Message": error.message,
    }


def send_message_batch(call: Call) -> dict[str, Any]:
    name = call.queue()
    entries = _entries(call)
    queue = call.engine.get_queue(call.account, name)
    good: list[tuple[str, NewMessage]] = []
    failed = []
    total = 0
    for e in entries:
        try:
            new = _new_message(e)
            _size_check(new, queue.settings.max_message_size)
            total += len(new.body)
            good.append((e["Id"], new))
        except SqsError as exc:
            failed.append(_failure(e["Id"], exc))
    if total > MAX_MESSAGE_SIZE:
        raise batch_error(
            "BatchRequestTooLong", f"Batch requests cannot be longer than {MAX_MESSAGE_SIZE} bytes."
        )
    successful = []
    if good:
        stored = call.engine.send(call.account, name, [new for _, new in good])
        successful = [
            {"Id": entry_id, **_sent(m)} for (entry_id, _), m in zip(good, stored, strict=False)
        ]
    return {"Successful": successful, "Failed": failed}


def _handle(claim_id: str, message_id: str) -> str:
    return base64.urlsafe_b64encode(f"{claim_id}:{message_id}".encode()).decode()


def _parse_handle(handle: str | None) -> tuple[str, str]:
    """(claim id, message id) of a receipt handle."""
    if not handle:
        raise missing_parameter("ReceiptHandle")
    try:
        claim_id, message_id = base64.urlsafe_b64decode(handle.encode()).decode().split(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise receipt_handle_invalid(handle) from None
    return claim_id, message_id


def _received(call: Call, m: Message, claim_id: str, system: list[str], user: list[str]) -> Any:
    body = m.body.decode("utf-8", errors="replace")
    out: dict[str, Any] = {
        "MessageId": m.id,
        "ReceiptHandle": _handle(claim_id, m.id),
        "MD5OfBody": attrs.md5_of_body(body),
        "Body": body,
    }
    available = {
        "ApproximateReceiveCount": str(m.claim_count),
        "ApproximateFirstReceiveTimestamp": str(int((m.first_claimed_at or 0) * 1000)),
        "SentTimestamp": str(int(m.enqueued_at * 1000)),
        "SenderId": m.client_id or call.account,
    }
    if m.provenance is not None:
        available["DeadLetterQueueSourceArn"] = call.arn(m.provenance.source_queue)
    if system:
        every = "All" in system
        out["Attributes"] = {k: v for k, v in available.items() if every or k in system}
    # The reserved DLQ.* attributes are shown through DeadLetterQueueSourceArn instead.
    own = {k: v for k, v in m.attributes.items() if k != SOURCE_QUEUE_ATTRIBUTE}
    picked = attrs.wanted(user, own)
    if picked:
        out["MessageAttributes"] = attrs.message_attributes_out(picked)
        digest = attrs.md5_of_attributes(picked)
        if digest:
            out["MD5OfMessageAttributes"] = digest
    return out


async def receive_message(call: Call) -> dict[str, Any]:
    name = call.queue()
    limit = call.integer("MaxNumberOfMessages", 1, 10, 1)
    visibility = call.integer("VisibilityTimeout", 0, 43_200)
    wait = call.integer("WaitTimeSeconds", 0, MAX_WAIT)
    system = call.names("AttributeNames") + call.names("MessageSystemAttributeNames")
    user = call.names("MessageAttributeNames")
    assert limit is not None
    queue = await run_in_threadpool(call.engine.get_queue, call.account, name)
    wait = queue.settings.receive_wait if wait is None else wait
    loop_time = asyncio.get_running_loop().time
    deadline = loop_time() + wait
    async with call.notifier.watching(call.account, name) as arrived:
        while True:
            claim = await run_in_threadpool(
                call.engine.claim, call.account, name, limit, visibility
            )
            remaining = deadline - loop_time()
            if claim.messages or remaining <= 0:
                break
            await wait_for(arrived, remaining)
    if not claim.messages:
        return {}  # as SQS: no Messages member at all when nothing was received
    return {"Messages": [_received(call, m, claim.id, system, user) for m in claim.messages]}


def delete_message(call: Call) -> dict[str, Any]:
    name = call.queue()
    claim_id, message_id = _parse_handle(call.text("ReceiptHandle"))
    _delete(call, name, claim_id, message_id)
    return {}


def _delete(call: Call, name: str, claim_id: str, message_id: str) -> None:
    """SQS deletes with a stale handle without complaint; so does this (nothing is removed
    when someone else holds the message since)."""
    with contextlib.suppress(errors.MessageNotFound):
        call.engine.delete_message(call.account, name, message_id, claim_id, strict=False)


def delete_message_batch(call: Call) -> dict[str, Any]:
    """All valid entries are deleted in one transaction."""
    name = call.queue()
    failed = []
    valid: list[tuple[str, str, str]] = []  # (entry id, message id, claim id)
    for e in _entries(call):
        try:
            claim_id, message_id = _parse_handle(e.get("ReceiptHandle"))
            valid.append((e["Id"], message_id, claim_id))
        except SqsError as exc:
            failed.append(_failure(e["Id"], exc))
    results = (
        call.engine.delete_held(
            call.account, name, [(mid, cid) for _, mid, cid in valid], strict=False
        )
        if valid
        else []
    )
    successful = []
    for (entry_id, _, _), result in zip(valid, results, strict=True):
        # A stale handle or a message already gone is no error on SQS either.
        if isinstance(result, errors.DeadletterError) and not isinstance(
            result, errors.MessageNotFound
        ):
            failed.append(_failure(entry_id, from_engine(result)))
        else:
            successful.append({"Id": entry_id})
    return {"Successful": successful, "Failed": failed}


def _change_visibility(call: Call, name: str, params: dict[str, Any]) -> None:
    claim_id, message_id = _parse_handle(params.get("ReceiptHandle"))
    raw = params.get("VisibilityTimeout")
    if raw is None or raw == "":
        raise missing_parameter("VisibilityTimeout")
    try:
        timeout = int(str(raw))
    except ValueError:
        raise invalid_parameter(
            f"Value {raw} for parameter VisibilityTimeout is invalid."
        ) from None
    if not 0 <= timeout <= 43_200:
        raise invalid_parameter(
            f"Value {timeout} for parameter VisibilityTimeout is invalid. Reason: Must be"
            " between 0 and 43200."
        )
    try:
        call.engine.change_visibility(call.account, name, message_id, claim_id, timeout)
    except errors.MessageNotFound:
        raise receipt_handle_invalid(str(params.get("ReceiptHandle"))) from None


def change_message_visibility(call: Call) -> dict[str, Any]:
    _change_visibility(call, call.queue(), call.params)
    return {}


def change_message_visibility_batch(call: Call) -> dict[str, Any]:
    name = call.queue()
    call.engine.get_queue(call.account, name)
    successful, failed = [], []
    for e in _entries(call):
        try:
            _change_visibility(call, name, e)
            successful.append({"Id": e["Id"]})
        except SqsError as exc:
            failed.append(_failure(e["Id"], exc))
        except errors.DeadletterError as exc:
            failed.append(_failure(e["Id"], from_engine(exc)))
    return {"Successful": successful, "Failed": failed}


# Message move tasks (redrive)


def _task_handle(task: RedriveTask, source_arn: str) -> str:
    doc = json.dumps({"taskId": task.id, "sourceArn": source_arn})
    return base64.b64encode(doc.encode()).decode()


def start_message_move_task(call: Call) -> dict[str, Any]:
    source_arn = call.text("SourceArn")
    assert source_arn is not None
    dlq = attrs.parse_arn(source_arn, call.account)
    destination_arn = call.text("DestinationArn", required=False)
    destination = attrs.parse_arn(destination_arn, call.account) if destination_arn else None
    rate = call.integer("MaxNumberOfMessagesPerSecond", 1, 500)
    if call.engine.find_queue(call.account, dlq) is None:
        raise SqsError("ResourceNotFoundException", f"The resource {source_arn} does not exist.")
    if not call.engine.dead_letter_sources(call.account, dlq):
        raise invalid_parameter(
            f"Source queue must be configured as a Dead Letter Queue: {source_arn}."
        )
    task = call.engine.start_redrive(call.account, dlq, destination, None, rate)
    return {"TaskHandle": _task_handle(task, source_arn)}


def cancel_message_move_task(call: Call) -> dict[str, Any]:
    handle = call.text("TaskHandle")
    assert handle is not None
    try:
        doc = json.loads(base64.b64decode(handle.encode()))
        task_id, source_arn = str(doc["taskId"]), str(doc["sourceArn"])
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise invalid_parameter("Value for parameter TaskHandle is invalid.") from None
    dlq = attrs.parse_arn(source_arn, call.account)
    try:
        task = call.engine.cancel_redrive(call.account, dlq, task_id)
    except errors.TaskNotFound:
        raise SqsError("ResourceNotFoundException", "Task does not exist.") from None
    return {"ApproximateNumberOfMessagesMoved": task.moved}


def list_message_move_tasks(call: Call) -> dict[str, Any]:
    source_arn = call.text("SourceArn")
    assert source_arn is not None
    dlq = attrs.parse_arn(source_arn, call.account)
    limit = call.integer("MaxResults", 1, 10, 1)
    assert limit is not None
    if call.engine.find_queue(call.account, dlq) is None:
        raise SqsError("ResourceNotFoundException", f"The resource {source_arn} does not exist.")
    results = []
    for task in call.engine.list_tasks(call.account, dlq, limit):
        entry: dict[str, Any] = {
            "Status": task.status.value,
            "SourceArn": source_arn,
            "ApproximateNumberOfMessagesMoved": task.moved,
            "ApproximateNumberOfMessagesToMove": task.to_move,
            "StartedTimestamp": int(task.started_at * 1000),
        }
        if task.status is TaskStatus.RUNNING:
            entry["TaskHandle"] = _task_handle(task, source_arn)
        if task.destination:
            entry["DestinationArn"] = call.arn(task.destination)
        if task.rate is not None:
            entry["MaxNumberOfMessagesPerSecond"] = int(task.rate)
        if task.failure_reason:
            entry["FailureReason"] = task.failure_reason
        results.append(entry)
    return {"Results": results}


SYNC_ACTIONS: dict[str, Action] = {
    "CreateQueue": create_queue,
    "GetQueueUrl": get_queue_url,
    "ListQueues": list_queues,
    "DeleteQueue": delete_queue,
    "GetQueueAttributes": get_queue_attributes,
    "SetQueueAttributes": set_queue_attributes,
    "TagQueue": tag_queue,
    "UntagQueue": untag_queue,
    "ListQueueTags": list_queue_tags,
    "PurgeQueue": purge_queue,
    "ListDeadLetterSourceQueues": list_dead_letter_source_queues,
    "SendMessage": send_message,
    "SendMessageBatch": send_message_batch,
    "DeleteMessage": delete_message,
    "DeleteMessageBatch": delete_message_batch,
    "ChangeMessageVisibility": change_message_visibility,
    "ChangeMessageVisibilityBatch": change_message_visibility_batch,
    "StartMessageMoveTask": start_message_move_task,
    "CancelMessageMoveTask": cancel_message_move_task,
    "ListMessageMoveTasks": list_message_move_tasks,
}
ASYNC_ACTIONS: dict[str, Callable[[Call], Awaitable[dict[str, Any]]]] = {
    "ReceiveMessage": receive_message,
}
