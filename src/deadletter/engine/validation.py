"""The engine's checks on what it is given (settings, sends, claims), before anything is written."""

from __future__ import annotations

from dataclasses import replace

from deadletter.domain import errors
from deadletter.domain.model import (
    MAX_CLAIM_COUNT,
    MAX_CLAIM_TTL,
    MAX_DELAY,
    MAX_DESCRIPTION,
    MAX_ERROR_DETAILS,
    MAX_MESSAGE_SIZE,
    MAX_REDRIVE_ALLOW_SOURCES,
    MAX_TTL,
    MIN_DLQ_MESSAGE_TTL,
    RESERVED_ATTRIBUTE_PREFIX,
    Attribute,
    NewMessage,
    QueueSettings,
    RedrivePermission,
)
from deadletter.engine import fifo
from deadletter.storage.base import Transaction

# Engine limits the domain model does not name (yet): the longest long poll a queue may ask
# for, and the most messages one claim hands out.
MAX_RECEIVE_WAIT = 20
MAX_CLAIM_LIMIT = 1000
ATTRIBUTE_TYPES = ("String", "Number", "Binary")


def check_range(what: str, value: int | float, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise errors.InvalidInput(f"{what} must be between {low} and {high}, not {value!r}")


def check_attributes(attributes: dict[str, Attribute]) -> None:
    for name, attribute in attributes.items():
        if name.upper().startswith(RESERVED_ATTRIBUTE_PREFIX):
            raise errors.ReservedAttribute(
                f"attribute {name!r}: names starting with"
                f" {RESERVED_ATTRIBUTE_PREFIX!r} are reserved"
            )
        if not name:
            raise errors.InvalidInput("attribute names cannot be empty")
        if attribute.type.split(".", 1)[0] not in ATTRIBUTE_TYPES:
            raise errors.InvalidInput(
                f"attribute {name!r}: type must be String, Number or Binary, not {attribute.type!r}"
            )


def checked_send(new: NewMessage, s: QueueSettings) -> tuple[int, int, bool]:
    """A new message's TTL, delay and dead-letter eligibility, with the queue's defaults
    filled in, once its attributes, size and ranges are checked against `s`."""
    check_attributes(new.attributes)
    size = len(new.body) + sum(
        len(k) + len(a.type) + len(a.value) for k, a in new.attributes.items()
    )
    if size > s.max_message_size:
        raise errors.MessageTooLarge(
            f"message of {size} bytes exceeds the queue's maximum of {s.max_message_size}"
        )
    ttl = s.default_ttl if new.ttl is None else new.ttl
    check_range("message TTL", ttl, 1, s.max_ttl)
    delay = s.default_delay if new.delay is None else new.delay
    check_range("delay", delay, 0, MAX_DELAY)
    eligible = new.dead_letter_eligible
    if eligible is None:
        eligible = s.dead_letter_eligible
    return ttl, delay, eligible


def check_claim(limit: int, grace: int) -> None:
    check_range("claim limit", limit, 1, MAX_CLAIM_LIMIT)
    check_range("grace", grace, 0, MAX_TTL)


def check_claim_ttl(what: str, ttl: int) -> None:
    check_range(what, ttl, 0, MAX_CLAIM_TTL)


def check_rejection(description: str | None, error: str | None) -> None:
    """What a consumer may say when it dead-letters a message itself."""
    if description is not None and len(description) > MAX_DESCRIPTION:
        raise errors.InvalidInput(f"description is longer than {MAX_DESCRIPTION} characters")
    if error is not None and len(error) > MAX_ERROR_DETAILS:
        raise errors.InvalidInput(f"error details are longer than {MAX_ERROR_DETAILS} characters")


def checked_settings(tx: Transaction, project: str, name: str, s: QueueSettings) -> QueueSettings:
    """Validate settings against their ranges and the no-chain, no-cycle rules; a policy that
    passes is stored active."""
    check_range("default message TTL", s.default_ttl, 1, MAX_TTL)
    check_range("maximum message TTL", s.max_ttl, 1, MAX_TTL)
    if s.default_ttl > s.max_ttl:
        raise errors.InvalidInput(
            f"default message TTL ({s.default_ttl}) exceeds the maximum ({s.max_ttl})"
        )
    check_range("default delay", s.default_delay, 0, MAX_DELAY)
    check_range("claim TTL", s.claim_ttl, 0, MAX_CLAIM_TTL)
    check_range("maximum message size", s.max_message_size, 1, MAX_MESSAGE_SIZE)
    check_range("receive wait time", s.receive_wait, 0, MAX_RECEIVE_WAIT)
    allow = s.redrive_allow
    if allow.permission is RedrivePermission.BY_QUEUE:
        if not 1 <= len(allow.sources) <= MAX_REDRIVE_ALLOW_SOURCES:
            raise errors.InvalidInput(
                f"a byQueue redrive-allow policy lists 1 to {MAX_REDRIVE_ALLOW_SOURCES}"
                " source queues"
            )
    elif allow.sources:
        raise errors.InvalidInput("source queues can be listed only with byQueue")
    fifo.check_settings(s, tx.get_queue(project, name))
    policy = s.dead_letter
    if policy is None:
        return s
    check_range("max claim count", policy.max_claims, 1, MAX_CLAIM_COUNT)
    if policy.message_ttl is not None:
        check_range("dead-letter message TTL", policy.message_ttl, MIN_DLQ_MESSAGE_TTL, MAX_TTL)
    if policy.target == name:
        raise errors.DeadLetterChainRefused(f"queue {name!r} cannot be its own dead-letter queue")
    target = tx.get_queue(project, policy.target)
    if target is None:
        raise errors.DeadLetterTargetMissing(
            f"dead-letter queue {policy.target!r} does not exist; create it first"
        )
    fifo.check_dead_letter_type(name, s, target)
    target_policy = target.settings.dead_letter
    if target_policy is not None and target_policy.active:
        raise errors.DeadLetterChainRefused(
            f"{policy.target!r} has a dead-letter policy of its own, so it cannot be a"
            " dead-letter queue (no chains)"
        )
    if name in tx.dead_letter_targets(project):
        raise errors.DeadLetterChainRefused(
            f"{name!r} is a dead-letter queue, so it cannot have a dead-letter policy (no chains)"
        )
    if not target.settings.redrive_allow.admits(name):
        raise errors.RedriveNotAllowed(
            f"the redrive-allow policy of {policy.target!r} does not admit {name!r}"
        )
    return s.with_changes(dead_letter=replace(policy, active=True))
