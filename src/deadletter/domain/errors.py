"""The domain's exception tree; each front end maps it to its wire errors in one table.

    DeadletterError
    ├── NotFound
    │   ├── QueueNotFound
    │   ├── MessageNotFound
    │   ├── ClaimNotFound
    │   ├── TaskNotFound
    │   ├── PatternNotFound
    │   ├── FilterNotFound
    │   ├── TagNotFound
    │   └── AutoRedriveNotFound  (the DLQ has no automatic redrive policy)
    ├── Conflict
    │   ├── QueueAlreadyExists
    │   ├── MessageClaimed
    │   ├── RedriveTaskActive
    │   ├── TaskNotRunning
    │   ├── TaskNotPaused
    │   ├── TagAlreadyExists
    │   ├── BatchBehind
    │   ├── TemplateAlreadyExists
    │   ├── TemplatePatternTaken (another template has the pattern: this one would never apply)
    │   ├── PatchConflict        (a JSON Patch's test fails, or it removes what is not there)
    │   ├── DeadLetterQueueInUse (deleting or purging a DLQ sources name, without force)
    │   ├── PatternImpure        (a canary over a pattern flagged as mixing failures, without force)
    │   └── AutoRedriveActive    (a resume of an automatic redrive policy that is active)
    ├── ClaimMismatch            (wrong or expired claim id)
    ├── InvalidInput
    │   ├── OutOfRange           (a number outside the range the engine takes for it)
    │   ├── ReservedAttribute
    │   ├── MessageTooLarge
    │   ├── InvalidFilter        (a dead-letter filter the language does not take)
    │   └── InvalidPatch         (an edit that is no patch, or whose result is no message)
    ├── QueueQuotaExceeded       (the tenant holds as many queues as it may)
    ├── LimitExceeded            (a project holds as many templates or subscriptions as it may)
    ├── QueueFull                (a bounded queue refuses a send past its bound)
    │   └── DeadLetterQueueFull  (a bounded DLQ refuses a dead letter)
    ├── DeadLetterPolicyError
    │   ├── DeadLetterChainRefused
    │   ├── DeadLetterTargetMissing
    │   ├── RedriveNotAllowed
    │   └── NoActiveDeadLetterPolicy
    └── StoreUnavailable         (the database cannot be reached or take writes: retry later)

The docstring of each class is its default message.
"""

from __future__ import annotations


class DeadletterError(Exception):
    """Something went wrong in deadletter."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or type(self).__name__).strip())

    @property
    def message(self) -> str:
        return str(self.args[0])


class NotFound(DeadletterError):
    """The resource does not exist."""


class QueueNotFound(NotFound):
    """The queue does not exist."""


class MessageNotFound(NotFound):
    """The message does not exist."""


class ClaimNotFound(NotFound):
    """The claim does not exist or has expired."""


class TaskNotFound(NotFound):
    """The redrive task does not exist."""


class PatternNotFound(NotFound):
    """No failure pattern with this id is stored for the dead-letter queue."""


class FilterNotFound(NotFound):
    """No filter of this name is saved on the dead-letter queue."""


class Conflict(DeadletterError):
    """The request conflicts with the current state."""


class QueueAlreadyExists(Conflict):
    """A queue with this name already exists."""


class MessageClaimed(Conflict):
    """The message is claimed; give its claim id to delete it."""


class RedriveTaskActive(Conflict):
    """A redrive task is already running on this dead-letter queue."""


class PatternImpure(Conflict):
    """The failure pattern is flagged impure (it may mix failures of different causes): a
    canary drawn from it cannot vouch for the rest. Redrive it with force, or split it first."""


class DeadLetterQueueInUse(Conflict):
    """The queue is the dead-letter queue of other queues; force it to delete or purge it."""

    def __init__(self, message: str | None = None, sources: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.sources = sources


class TaskNotRunning(Conflict):
    """The redrive task is not running."""


class TaskNotPaused(Conflict):
    """The redrive task is not paused."""


class AutoRedriveNotFound(NotFound):
    """The dead-letter queue has no automatic redrive policy."""


class AutoRedriveActive(Conflict):
    """The automatic redrive policy is active: there is nothing to resume."""


class ClaimMismatch(DeadletterError):
    """The claim id does not match the message's live claim (wrong or expired)."""


class InvalidInput(DeadletterError):
    """The request is not valid."""


class OutOfRange(InvalidInput):
    """A number outside the range the engine takes for it. The range travels with the error so
    that a face words the refusal its own way (its parameter's name, its phrasing) without
    keeping a copy of the range."""

    def __init__(
        self,
        message: str | None = None,
        *,
        what: str = "the value",
        value: object = None,
        low: int = 0,
        high: int = 0,
    ) -> None:
        super().__init__(message or f"{what} must be between {low} and {high}, not {value!r}")
        self.what, self.value, self.low, self.high = what, value, low, high


class ReservedAttribute(InvalidInput):
    """Attribute names starting with 'DLQ.' are reserved."""


class MessageTooLarge(InvalidInput):
    """The message is larger than the queue allows."""


class InvalidFilter(InvalidInput):
    """The dead-letter filter is not valid."""


class InvalidPatch(InvalidInput):
    """The edit is not a valid patch of the dead letter."""


class QueueQuotaExceeded(DeadletterError):
    """The tenant already holds as many queues as the server allows one tenant."""


class LimitExceeded(DeadletterError):
    """The project already holds as many of these as one project may (docs/limits.md)."""


class QueueFull(DeadletterError):
    """The queue is at its bound and its overflow policy refuses more messages."""


class DeadLetterQueueFull(QueueFull):
    """The dead-letter queue is at its bound and refuses more dead letters: the messages stay
    where they are."""


class DeadLetterPolicyError(DeadletterError):
    """The dead-letter policy is not valid."""


class DeadLetterChainRefused(DeadLetterPolicyError):
    """Dead-letter queues cannot be chained or form a cycle."""


class DeadLetterTargetMissing(DeadLetterPolicyError):
    """The dead-letter queue named by the policy does not exist."""


class RedriveNotAllowed(DeadLetterPolicyError):
    """The dead-letter queue's redrive-allow policy does not admit this source queue."""


class NoActiveDeadLetterPolicy(DeadLetterPolicyError):
    """The queue has no active dead-letter policy."""


class TagNotFound(NotFound):
    """The consumer tag does not exist."""


class TagAlreadyExists(Conflict):
    """The queue already has a consumer tag of that name."""


class TemplateAlreadyExists(Conflict):
    """The project already has a template of that name."""


class TemplatePatternTaken(Conflict):
    """Another template of the project has this pattern; of two equal patterns only the first
    by name ever applies, so a second would be a template that never takes effect."""


class PatchConflict(Conflict):
    """The JSON Patch does not apply to the dead letter as it is."""


class BatchBehind(Conflict):
    """A writer's batch id is below the last batch it merged into the DLQ's patterns."""


class StoreUnavailable(DeadletterError):
    """The store cannot be reached or cannot take writes now; try again later.

    The store raises it for a database that went away (refused, reset or silent connections,
    a pool that found none in time) and for a disk that is full or failing. Nothing of the
    request is committed, so the request may be sent again as it was. `reason` says which in
    a few words for operators (logs and `/v2/health`); the message clients see is generic."""

    # Seconds a client is asked to wait before it tries again (Zaqar's `Retry-After`).
    retry_after = 5

    def __init__(
        self, reason: str = "the database cannot be reached", reads_served: bool = False
    ) -> None:
        super().__init__(
            f"The store is unavailable: {reason}. Try again in {self.retry_after} seconds."
        )
        self.reason = reason
        # A full or failing disk refuses writes while reads go on: only a write that commits
        # shows that it is over.
        self.reads_served = reads_served
