"""Each face maps the domain's errors through one table: every class has its own entry, and
the SQS table answers what the face always answered."""

from __future__ import annotations

import pytest

from deadletter.api.sqs import errors as sqs_errors
from deadletter.api.zaqar import errors as zaqar_errors
from deadletter.domain import errors

DOMAIN_ERRORS = sorted(
    (
        c
        for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, errors.DeadletterError)
    ),
    key=lambda c: c.__name__,
)

# class -> (shape, code, status) the SQS face answers. AWS words some errors its own way, so
# those drop the engine's message for AWS's.
AWS_WORDED = {
    errors.QueueNotFound: "The specified queue does not exist.",
    errors.TagNotFound: "The specified queue does not exist.",
    errors.TaskNotFound: "Task does not exist.",
    errors.MessageClaimed: "The message referred to is not in flight.",
    errors.ClaimMismatch: "The message referred to is not in flight.",
    errors.MessageNotFound: "Value for parameter ReceiptHandle is invalid. Reason: Message does"
    " not exist or is not available for visibility timeout change.",
    errors.RedriveTaskActive: "There is already a task running. Only one active task is allowed"
    " for a source queue arn at a given time.",
}
NOT_INFLIGHT = ("MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight", 400)
UNSUPPORTED = ("UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", 400)
INVALID = ("InvalidParameterValue", "InvalidParameterValue", 400)
SQS_EXPECTED: dict[type[errors.DeadletterError], tuple[str, str, int]] = {
    errors.QueueNotFound: (
        "QueueDoesNotExist",
        "AWS.SimpleQueueService.NonExistentQueue",
        400,
    ),
    errors.TaskNotFound: ("ResourceNotFoundException", "ResourceNotFoundException", 404),
    # A queue URL naming a consumer tag that does not exist names no queue (docs/sqs.md).
    errors.TagNotFound: ("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", 400),
    errors.QueueAlreadyExists: ("QueueNameExists", "QueueAlreadyExists", 400),
    errors.RedriveTaskActive: INVALID,
    errors.TaskNotRunning: UNSUPPORTED,
    errors.TaskNotPaused: UNSUPPORTED,
    errors.ClaimMismatch: NOT_INFLIGHT,
    errors.MessageClaimed: NOT_INFLIGHT,
    errors.QueueQuotaExceeded: ("OverLimit", "OverLimit", 403),
    errors.LimitExceeded: ("OverLimit", "OverLimit", 403),
    errors.QueueFull: ("OverLimit", "OverLimit", 403),
    errors.DeadLetterQueueFull: ("OverLimit", "OverLimit", 403),
    errors.DeadletterError: ("InternalFailure", "InternalFailure", 500),
    errors.StoreUnavailable: ("ServiceUnavailable", "ServiceUnavailable", 503),
}


def test_the_domain_tree_is_found() -> None:
    assert errors.DeadletterError in DOMAIN_ERRORS and errors.PatternNotFound in DOMAIN_ERRORS
    assert len(DOMAIN_ERRORS) >= 20


@pytest.mark.parametrize("cls", DOMAIN_ERRORS, ids=lambda c: c.__name__)
def test_every_domain_error_has_its_own_entry_in_each_table(
    cls: type[errors.DeadletterError],
) -> None:
    assert cls in zaqar_errors.ERROR_TABLE, f"add {cls.__name__} to the Zaqar ERROR_TABLE"
    assert cls in sqs_errors.ERROR_TABLE, f"add {cls.__name__} to the SQS ERROR_TABLE"


@pytest.mark.parametrize("cls", DOMAIN_ERRORS, ids=lambda c: c.__name__)
def test_sqs_answers_for_each_domain_error(cls: type[errors.DeadletterError]) -> None:
    error = sqs_errors.from_engine(cls("what went wrong"))
    assert (error.shape, error.code, error.status) == SQS_EXPECTED.get(cls, INVALID)
    if error.status < 500:
        assert error.message == AWS_WORDED.get(cls, "what went wrong")


def test_a_subclass_is_mapped_along_the_hierarchy() -> None:
    class StaleQueue(errors.QueueNotFound):
        """A queue that went away."""

    assert zaqar_errors.status_of(StaleQueue()) == (404, "Queue not found")
    assert sqs_errors.from_engine(StaleQueue()).shape == "QueueDoesNotExist"
