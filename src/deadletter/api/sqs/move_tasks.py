"""SQS message move tasks: the engine's redrive tasks behind AWS's task handles."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any
from urllib.parse import parse_qsl

from deadletter.api.sqs import attributes as attrs
from deadletter.api.sqs.call import Call
from deadletter.api.sqs.errors import SqsError, invalid_parameter, invalid_value
from deadletter.api.strict_json import InvalidJson, loads
from deadletter.domain import errors, filters, names
from deadletter.domain.model import DeadLetterFilter
from deadletter.domain.redrive import RedriveTask, TaskStatus

MAX_MOVE_RATE = 500
MAX_MOVE_TASKS = 10


def _not_found(parameter: str) -> SqsError:
    return SqsError(
        "ResourceNotFoundException",
        f"The resource that you specified for the {parameter} parameter doesn't exist.",
    )


def _task_handle(task: RedriveTask, source_arn: str) -> str:
    doc = json.dumps({"taskId": task.id, "sourceArn": source_arn})
    return base64.b64encode(doc.encode()).decode()


def start_message_move_task(call: Call) -> dict[str, Any]:
    source_arn = call.text("SourceArn")
    assert source_arn is not None
    dlq = attrs.parse_arn(source_arn, call.account, region=call.region)
    destination_arn = call.text("DestinationArn", required=False)
    destination = (
        attrs.parse_arn(destination_arn, call.account, "DestinationArn", call.region)
        if destination_arn
        else None
    )
    rate = call.integer("MaxNumberOfMessagesPerSecond", 1, MAX_MOVE_RATE)
    where = move_filter(call.params.get("DeadLetterFilter"))
    if call.engine.find_queue(call.project, dlq) is None:
        raise _not_found("SourceArn")
    if destination is not None and call.engine.find_queue(call.project, destination) is None:
        raise _not_found("DestinationArn")
    if not call.engine.is_redrive_source(call.project, dlq):
        raise invalid_parameter("Source queue must be configured as a Dead Letter Queue.")
    task = call.engine.start_redrive(
        call.project, dlq, destination=destination, where=where, rate=rate
    )
    return {"TaskHandle": _task_handle(task, source_arn)}


def move_filter(text: object) -> DeadLetterFilter | None:
    """The `DeadLetterFilter` extension: the native API's filter parameters as one query
    string; a bad one is InvalidParameterValue, as the error table maps InvalidFilter. Given
    but empty or blank, it is refused: a task without a filter moves the whole DLQ, which
    a request must ask for by leaving the parameter out."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise invalid_value(text, "DeadLetterFilter", "Must be a string.")
    if filters.blank(text):
        raise invalid_parameter(
            "Value for parameter DeadLetterFilter is invalid. Reason: it is empty; leave it"
            " out to move every dead letter."
        )
    given: dict[str, list[str]] = {}
    try:
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise invalid_parameter(
            "Value for parameter DeadLetterFilter is invalid. Reason: it is a query string,"
            " NAME=VALUE pairs joined by &."
        ) from None
    for key, value in pairs:
        given.setdefault(key, []).append(value)
    return filters.parse(given)


def cancel_message_move_task(call: Call) -> dict[str, Any]:
    handle = call.text("TaskHandle")
    assert handle is not None
    try:
        doc = loads(base64.b64decode(handle.encode()))
        task_id, source_arn = doc["taskId"], doc["sourceArn"]
    except (binascii.Error, InvalidJson, KeyError, TypeError):
        raise invalid_parameter("Value for parameter TaskHandle is invalid.") from None
    if not (isinstance(task_id, str) and names.ID.valid(task_id) and isinstance(source_arn, str)):
        raise invalid_parameter("Value for parameter TaskHandle is invalid.")
    dlq = attrs.parse_arn(source_arn, call.account, region=call.region)
    try:
        task = call.engine.cancel_redrive(call.project, dlq, task_id=task_id)
    except errors.TaskNotFound:
        raise SqsError("ResourceNotFoundException", "Task does not exist.") from None
    return {"ApproximateNumberOfMessagesMoved": task.moved}


def list_message_move_tasks(call: Call) -> dict[str, Any]:
    source_arn = call.text("SourceArn")
    assert source_arn is not None
    dlq = attrs.parse_arn(source_arn, call.account, region=call.region)
    limit = call.integer("MaxResults", 1, MAX_MOVE_TASKS, 1)
    assert limit is not None
    if call.engine.find_queue(call.project, dlq) is None:
        raise _not_found("SourceArn")
    results = []
    for task in call.engine.list_tasks(call.project, dlq, limit=limit):
        entry: dict[str, Any] = {
            "Status": _sqs_status(task.status),
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
        elif task.status is TaskStatus.PAUSED and task.canary is not None:
            entry["FailureReason"] = f"paused by its canary: {task.canary.reason}"
        results.append(entry)
    return {"Results": results}


def _sqs_status(status: TaskStatus) -> str:
    """SQS knows no paused task (a native redrive's canary pauses it): it stopped moving with
    a reason, which SQS calls FAILED."""
    return "FAILED" if status is TaskStatus.PAUSED else status.value
