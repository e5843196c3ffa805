"""SQS errors: one class carrying AWS's two codes, and the engine's errors mapped to them.

The JSON protocol names the error in `__type` (the shape name botocore knows) and in the
`x-amzn-query-error` header (the query protocol's code, which botocore reports as
`Error.Code`); the query protocol puts the latter in `<Code>`.

Engine errors go through one table; what it does not answer with a 4xx (an error it maps to
500, or an exception that is not the domain's at all) is an InternalFailure and is logged
with its traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from deadletter.domain import errors

log = logging.getLogger("deadletter.api.sqs")


class SqsError(Exception):
    def __init__(
        self, shape: str, message: str, code: str | None = None, status: int = 400
    ) -> None:
        super().__init__(message)
        self.shape = shape
        self.code = code or shape
        self.message = message
        self.status = status

    @property
    def sender_fault(self) -> bool:
        return self.status < 500


def queue_does_not_exist(name: str = "") -> SqsError:
    return SqsError(
        "QueueDoesNotExist",
        "The specified queue does not exist." + (f" ({name})" if name else ""),
        "AWS.SimpleQueueService.NonExistentQueue",
    )


def invalid_parameter(message: str) -> SqsError:
    return SqsError("InvalidParameterValue", message)


def missing_parameter(name: str) -> SqsError:
    return SqsError("MissingParameter", f"The request must contain the parameter {name}.")


def invalid_attribute_name(name: str) -> SqsError:
    return SqsError("InvalidAttributeName", f"Unknown Attribute {name}.")


def invalid_attribute_value(message: str) -> SqsError:
    return SqsError("InvalidAttributeValue", message)


def unsupported(message: str) -> SqsError:
    return SqsError("UnsupportedOperation", message, "AWS.SimpleQueueService.UnsupportedOperation")


def receipt_handle_invalid(handle: str) -> SqsError:
    return SqsError(
        "ReceiptHandleIsInvalid",
        f"The input receipt handle {handle!r} is not a valid receipt handle.",
    )


def batch_error(shape: str, message: str) -> SqsError:
    return SqsError(shape, message, f"AWS.SimpleQueueService.{shape}")


def internal_failure(message: str = "The request failed; see logs.") -> SqsError:
    return SqsError("InternalFailure", message, status=500)


def _message_not_inflight(message: str) -> SqsError:
    return SqsError("MessageNotInflight", message, "AWS.SimpleQueueService.MessageNotInflight")


# Looked up along the exception's class hierarchy, most specific first; each entry builds the
# SQS error from the engine's message. Every class of the domain's tree has its own entry (a
# test checks it), so a new error is mapped on purpose.
ERROR_TABLE: dict[type[errors.DeadletterError], Callable[[str], SqsError]] = {
    errors.QueueNotFound: lambda message: queue_does_not_exist(),
    errors.MessageNotFound: invalid_parameter,
    errors.ClaimNotFound: invalid_parameter,
    errors.TaskNotFound: lambda message: SqsError("ResourceNotFoundException", message),
    errors.PatternNotFound: invalid_parameter,
    # A queue URL with a tag that does not exist names no queue (docs/sqs.md).
    errors.TagNotFound: lambda message: SqsError(
        "QueueDoesNotExist", message, "AWS.SimpleQueueService.NonExistentQueue"
    ),
    errors.NotFound: invalid_parameter,
    errors.QueueAlreadyExists: lambda message: SqsError(
        "QueueNameExists", message, "QueueAlreadyExists"
    ),
    errors.MessageClaimed: _message_not_inflight,
    errors.RedriveTaskActive: unsupported,
    errors.TaskNotRunning: unsupported,
    errors.TagAlreadyExists: invalid_parameter,
    errors.Conflict: invalid_parameter,
    errors.ClaimMismatch: _message_not_inflight,
    errors.ReservedAttribute: invalid_parameter,
    errors.MessageTooLarge: invalid_parameter,
    errors.InvalidInput: invalid_parameter,
    errors.DeadLetterChainRefused: invalid_parameter,
    errors.DeadLetterTargetMissing: invalid_parameter,
    errors.RedriveNotAllowed: invalid_parameter,
    errors.NoActiveDeadLetterPolicy: invalid_parameter,
    errors.DeadLetterPolicyError: invalid_parameter,
    errors.DeadletterError: lambda message: internal_failure(),
}


def from_engine(exc: errors.DeadletterError) -> SqsError:
    """The SQS error for an engine error (the message is the engine's)."""
    for cls in type(exc).__mro__:
        if cls in ERROR_TABLE:
            return ERROR_TABLE[cls](exc.message)
    return internal_failure()


def from_exception(exc: BaseException, request: str = "") -> SqsError:
    """The SQS error for anything an action raised; a 5xx is logged with its traceback."""
    if isinstance(exc, SqsError):
        error = exc
    elif isinstance(exc, errors.DeadletterError):
        error = from_engine(exc)
    else:
        error = internal_failure()
    if not error.sender_fault:
        log.exception("SQS request failed: %s", request, exc_info=exc)
    return error
