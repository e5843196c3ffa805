"""Zaqar's wire errors: the one table from engine exceptions to status + title/description.

Whatever the table does not answer with a 4xx (an error it maps to 500, or an exception that
is not the domain's at all) is a 500 `{"title","description"}` and is logged with its traceback.
A store that cannot be reached is a 503 with `Retry-After`, an answer rather than a failure:
the store logs the outage once (`storage.base.Availability`), not each request.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from deadletter.api.json_response import JSONResponse
from deadletter.domain import errors


class ZaqarError(Exception):
    """An error the Zaqar face itself detects while reading a request."""

    def __init__(self, status: int, title: str, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.title = title
        self.description = description


log = logging.getLogger(__name__)

INTERNAL = (500, "Internal server error")


def bad_request(description: str) -> ZaqarError:
    return ZaqarError(400, "Invalid API request", description)


def shown(value: Any) -> str:
    """A client's value as JSON spells it (`true`, not Python's `True`), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def out_of_range(what: str, low: int, high: int, value: Any, unit: str = "") -> ZaqarError:
    """Every integer-range refusal of the face (TTLs, delays, counts) reads the same way."""
    return bad_request(
        f"{what} must be an integer between {low} and {high}{unit}, not {shown(value)}."
    )


# Looked up along the exception's class hierarchy, most specific first. Every class of the
# domain's tree has its own entry (a test checks it), so a new error is mapped on purpose.
ERROR_TABLE: dict[type[errors.DeadletterError], tuple[int, str]] = {
    errors.QueueNotFound: (404, "Queue not found"),
    errors.MessageNotFound: (404, "Message not found"),
    errors.ClaimNotFound: (404, "Claim not found"),
    errors.TaskNotFound: (404, "Redrive task not found"),
    errors.PatternNotFound: (404, "Pattern not found"),
    errors.FilterNotFound: (404, "Filter not found"),
    errors.TagNotFound: (404, "Tag not found"),
    errors.AutoRedriveNotFound: (404, "Automatic redrive not found"),
    errors.NotFound: (404, "Not found"),
    errors.QueueAlreadyExists: (409, "Queue already exists"),
    errors.MessageClaimed: (403, "Message is claimed"),
    errors.RedriveTaskActive: (409, "Redrive task already running"),
    errors.TaskNotRunning: (409, "Redrive task not running"),
    errors.TaskNotPaused: (409, "Redrive task not paused"),
    errors.TagAlreadyExists: (409, "Tag already exists"),
    errors.TemplateAlreadyExists: (409, "Template already exists"),
    errors.TemplatePatternTaken: (409, "Template pattern taken"),
    errors.BatchBehind: (409, "Batch behind"),
    errors.PatchConflict: (409, "Patch conflict"),
    errors.DeadLetterQueueInUse: (409, "Dead-letter queue in use"),
    errors.PatternImpure: (409, "Pattern impure"),
    errors.AutoRedriveActive: (409, "Automatic redrive active"),
    errors.Conflict: (409, "Conflict"),
    errors.ClaimMismatch: (400, "Invalid claim"),
    errors.ReservedAttribute: (400, "Invalid message attribute"),
    errors.MessageTooLarge: (400, "Invalid request body"),
    errors.OutOfRange: (400, "Invalid API request"),
    errors.InvalidFilter: (400, "Invalid filter"),
    errors.InvalidPatch: (400, "Invalid patch"),
    errors.InvalidInput: (400, "Invalid API request"),
    errors.QueueQuotaExceeded: (403, "Queue quota exceeded"),
    errors.LimitExceeded: (403, "Limit exceeded"),
    # The queue's state refuses the send, not the request's form: the same request succeeds
    # once its consumers have taken messages out (409, as for a conflict of state).
    errors.QueueFull: (409, "Queue is full"),
    errors.DeadLetterQueueFull: (409, "Dead-letter queue is full"),
    errors.DeadLetterChainRefused: (400, "Invalid dead-letter policy"),
    errors.DeadLetterTargetMissing: (400, "Invalid dead-letter policy"),
    errors.RedriveNotAllowed: (400, "Invalid dead-letter policy"),
    errors.NoActiveDeadLetterPolicy: (409, "No active dead-letter policy"),
    errors.DeadLetterPolicyError: (400, "Invalid dead-letter policy"),
    errors.StoreUnavailable: (503, "Service unavailable"),
    errors.DeadletterError: INTERNAL,
}


def status_of(exc: errors.DeadletterError) -> tuple[int, str]:
    for cls in type(exc).__mro__:
        if cls in ERROR_TABLE:
            return ERROR_TABLE[cls]
    return INTERNAL


def error_response(
    status: int, title: str, description: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"title": title, "description": description}, status_code=status, headers=headers
    )


def response_for(exc: Exception, request: str = "") -> JSONResponse:
    """The answer to any exception a handler raised; `request` (method and path) is logged."""
    if isinstance(exc, errors.OutOfRange):  # worded as the face's own range refusals
        exc = out_of_range(exc.what, exc.low, exc.high, exc.value)
    if isinstance(exc, ZaqarError):
        return error_response(exc.status, exc.title, exc.description)
    if isinstance(exc, errors.DeadletterError):
        status, title = status_of(exc)
        if isinstance(exc, errors.StoreUnavailable):
            retry = {"Retry-After": str(exc.retry_after)}
            return error_response(status, title, exc.message, retry)
        if status < 500:
            return error_response(status, title, exc.message)
    log.exception("request failed: %s", request, exc_info=exc)
    return error_response(*INTERNAL, "The request failed; see logs.")
