"""SQS errors: one class carrying AWS's two codes, and the engine's errors mapped to them.

The JSON protocol names the error in `__type` (the shape name botocore knows) and in the
`x-amzn-query-error` header (the query protocol's code, which botocore reports as
`Error.Code`); the query protocol puts the latter in `<Code>`.
"""

from __future__ import annotations

from deadletter.domain import errors


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


def from_engine(exc: errors.DeadletterError) -> SqsError:
    """The SQS error for an engine error (one table; the message is the engine's)."""
    message = exc.message
    if isinstance(exc, errors.QueueNotFound):
        return queue_does_not_exist()
    if isinstance(exc, errors.TaskNotFound):
        return SqsError("ResourceNotFoundException", message)
    if isinstance(exc, errors.QueueAlreadyExists):
        return SqsError("QueueNameExists", message, "QueueAlreadyExists")
    if isinstance(exc, errors.RedriveTaskActive | errors.TaskNotRunning):
        return unsupported(message)
    if isinstance(exc, errors.ClaimMismatch | errors.MessageClaimed):
        return SqsError("MessageNotInflight", message, "AWS.SimpleQueueService.MessageNotInflight")
    if isinstance(exc, errors.MessageTooLarge | errors.ReservedAttribute):
        return invalid_parameter(message)
    if isinstance(exc, errors.DeadLetterPolicyError):
        return invalid_parameter(message)
    return invalid_parameter(message)
