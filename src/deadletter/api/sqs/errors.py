"""SQS errors: one class carrying AWS's two names of an error, the catalogue of every error
this face gives (code, HTTP status, fault, as AWS answers them), and the engine's errors
mapped to them.

The JSON protocol names the error in `__type` (the shape name botocore knows) and in the
`x-amzn-query-error` header (`<code>;Sender|Receiver`, which botocore reports as
`Error.Code`); the query protocol puts the code in `<Code>` and the fault in `<Type>`. The
codes and statuses are those of SQS's service model (its `awsQueryError` traits) and of AWS's
common errors; the messages are AWS's own wording, so that code matching on them works here.

Engine errors go through one table; what it does not answer with a 4xx (an error it maps to
500, or an exception that is not the domain's at all) is an InternalFailure and is logged
with its traceback. A store that cannot be reached is AWS's ServiceUnavailable (503, which
botocore retries), an answer rather than a failure: the store logs the outage once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from deadletter.domain import errors

log = logging.getLogger(__name__)

_Q = "AWS.SimpleQueueService."
# shape -> (query error code, HTTP status). Modelled exceptions first, then AWS's common
# errors (not in the model, so botocore raises a plain ClientError with the code).
CATALOGUE: dict[str, tuple[str, int]] = {
    "QueueDoesNotExist": (_Q + "NonExistentQueue", 400),
    "QueueNameExists": ("QueueAlreadyExists", 400),
    "InvalidAttributeName": ("InvalidAttributeName", 400),
    "InvalidAttributeValue": ("InvalidAttributeValue", 400),
    "InvalidMessageContents": ("InvalidMessageContents", 400),
    "ReceiptHandleIsInvalid": ("ReceiptHandleIsInvalid", 404),
    "MessageNotInflight": (_Q + "MessageNotInflight", 400),
    "EmptyBatchRequest": (_Q + "EmptyBatchRequest", 400),
    "TooManyEntriesInBatchRequest": (_Q + "TooManyEntriesInBatchRequest", 400),
    "BatchEntryIdsNotDistinct": (_Q + "BatchEntryIdsNotDistinct", 400),
    "InvalidBatchEntryId": (_Q + "InvalidBatchEntryId", 400),
    "BatchRequestTooLong": (_Q + "BatchRequestTooLong", 400),
    "UnsupportedOperation": (_Q + "UnsupportedOperation", 400),
    "ResourceNotFoundException": ("ResourceNotFoundException", 404),
    "OverLimit": ("OverLimit", 403),
    "InvalidParameterValue": ("InvalidParameterValue", 400),
    "MissingParameter": ("MissingParameter", 400),
    "InvalidAction": ("InvalidAction", 400),
    "MalformedQueryString": ("MalformedQueryString", 404),
    "SerializationException": ("SerializationException", 400),
    "RequestEntityTooLarge": ("RequestEntityTooLarge", 413),
    "AccessDenied": ("AccessDenied", 403),
    "InternalFailure": ("InternalFailure", 500),
    "ServiceUnavailable": ("ServiceUnavailable", 503),
}


class SqsError(Exception):
    """An SQS error: `shape` is its JSON name; the query code and the status default to the
    catalogue's. `query_message` is the wording of the query protocol where AWS words an error
    differently there (a missing queue)."""

    def __init__(
        self,
        shape: str,
        message: str,
        code: str | None = None,
        status: int | None = None,
        query_message: str | None = None,
    ) -> None:
        super().__init__(message)
        known_code, known_status = CATALOGUE.get(shape, (shape, 400))
        self.shape = shape
        self.code = code or known_code
        self.message = message
        self.status = status or known_status
        self.query_message = query_message or message

    @property
    def sender_fault(self) -> bool:
        return self.status < 500


def queue_does_not_exist(name: str = "") -> SqsError:
    """AWS says it one way in JSON and another in XML; neither names the queue."""
    return SqsError(
        "QueueDoesNotExist",
        "The specified queue does not exist.",
        query_message="The specified queue does not exist for this wsdl version.",
    )


def invalid_parameter(message: str) -> SqsError:
    return SqsError("InvalidParameterValue", message)


def invalid_value(value: object, name: str, reason: str) -> SqsError:
    """AWS's usual refusal of one parameter's value."""
    return invalid_parameter(f"Value {value} for parameter {name} is invalid. Reason: {reason}")


def missing_parameter(name: str) -> SqsError:
    return SqsError("MissingParameter", f"The request must contain the parameter {name}.")


def invalid_attribute_name(name: str) -> SqsError:
    return SqsError("InvalidAttributeName", f"Unknown Attribute {name}.")


def invalid_attribute_value(name: str) -> SqsError:
    return SqsError("InvalidAttributeValue", f"Invalid value for the parameter {name}.")


def unsupported(message: str) -> SqsError:
    return SqsError("UnsupportedOperation", message)


def receipt_handle_invalid(handle: str) -> SqsError:
    return SqsError(
        "ReceiptHandleIsInvalid",
        f'The input receipt handle "{handle}" is not a valid receipt handle.',
    )


def batch_error(shape: str, message: str) -> SqsError:
    return SqsError(shape, message)


def internal_failure(message: str = "The request failed; see logs.") -> SqsError:
    return SqsError("InternalFailure", message)


def message_not_inflight(message: str = "") -> SqsError:
    return SqsError("MessageNotInflight", "The message referred to is not in flight.")


def _gone_message(message: str) -> SqsError:
    """A handle whose message was deleted or moved since (ChangeMessageVisibility)."""
    return invalid_parameter(
        "Value for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not"
        " available for visibility timeout change."
    )


def _move_task_conflict(message: str) -> SqsError:
    return invalid_parameter(
        "There is already a task running. Only one active task is allowed for a source queue"
        " arn at a given time."
    )


# Looked up along the exception's class hierarchy, most specific first; each entry builds the
# SQS error from the engine's message. Every class of the domain's tree has its own entry (a
# test checks it), so a new error is mapped on purpose.
ERROR_TABLE: dict[type[errors.DeadletterError], Callable[[str], SqsError]] = {
    errors.QueueNotFound: lambda message: queue_does_not_exist(),
    errors.MessageNotFound: _gone_message,
    errors.ClaimNotFound: invalid_parameter,
    errors.TaskNotFound: lambda message: SqsError(
        "ResourceNotFoundException", "Task does not exist."
    ),
    errors.PatternNotFound: invalid_parameter,
    errors.FilterNotFound: invalid_parameter,
    # A queue URL with a tag that does not exist names no queue (docs/sqs.md).
    errors.TagNotFound: lambda message: queue_does_not_exist(),
    errors.NotFound: invalid_parameter,
    errors.QueueAlreadyExists: lambda message: SqsError("QueueNameExists", message),
    errors.MessageClaimed: message_not_inflight,
    errors.RedriveTaskActive: _move_task_conflict,
    errors.TaskNotRunning: unsupported,
    errors.TaskNotPaused: unsupported,
    errors.TagAlreadyExists: invalid_parameter,
    errors.TemplateAlreadyExists: invalid_parameter,
    errors.TemplatePatternTaken: invalid_parameter,
    errors.BatchBehind: invalid_parameter,
    # This face edits no dead letter; a native edit's conflict, were it to reach it.
    errors.PatchConflict: invalid_parameter,
    # Never raised here: this face deletes and purges as AWS does, DLQ or not (docs/sqs.md).
    errors.DeadLetterQueueInUse: invalid_parameter,
    # Never raised here: SQS's move tasks have no canary (docs/sqs.md).
    errors.PatternImpure: invalid_parameter,
    # Never raised here: automatic redrive is the native API's (docs/api.md).
    errors.AutoRedriveActive: invalid_parameter,
    errors.AutoRedriveNotFound: invalid_parameter,
    errors.Conflict: invalid_parameter,
    errors.ClaimMismatch: message_not_inflight,
    errors.ReservedAttribute: invalid_parameter,
    errors.MessageTooLarge: invalid_parameter,
    errors.OutOfRange: invalid_parameter,
    # StartMessageMoveTask's DeadLetterFilter extension (docs/sqs.md).
    errors.InvalidFilter: invalid_parameter,
    errors.InvalidPatch: invalid_parameter,
    errors.InvalidInput: invalid_parameter,
    errors.QueueQuotaExceeded: lambda message: SqsError("OverLimit", message),
    errors.LimitExceeded: lambda message: SqsError("OverLimit", message),
    # AWS's own code for a limit a queue has reached (its in-flight maximum), 403.
    errors.QueueFull: lambda message: SqsError("OverLimit", message),
    errors.DeadLetterQueueFull: lambda message: SqsError("OverLimit", message),
    errors.DeadLetterChainRefused: invalid_parameter,
    errors.DeadLetterTargetMissing: invalid_parameter,
    errors.RedriveNotAllowed: invalid_parameter,
    errors.NoActiveDeadLetterPolicy: invalid_parameter,
    errors.DeadLetterPolicyError: invalid_parameter,
    errors.StoreUnavailable: lambda message: SqsError("ServiceUnavailable", message),
    errors.DeadletterError: lambda message: internal_failure(),
}


def from_engine(exc: errors.DeadletterError) -> SqsError:
    """The SQS error for an engine error (the message is the engine's)."""
    for cls in type(exc).__mro__:
        if cls in ERROR_TABLE:
            return ERROR_TABLE[cls](exc.message)
    return internal_failure()


def from_exception(exc: BaseException, request: str = "") -> SqsError:
    """The SQS error for anything an action raised; a 500 is logged with its traceback."""
    if isinstance(exc, SqsError):
        error = exc
    elif isinstance(exc, errors.DeadletterError):
        error = from_engine(exc)
    else:
        error = internal_failure()
    if error.status == 500:
        log.exception("SQS request failed: %s", request, exc_info=exc)
    return error
