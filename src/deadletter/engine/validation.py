"""The engine's checks on what it is given (settings, sends, claims), before anything is written."""

from __future__ import annotations

import math

from deadletter.domain import errors, names, routing
from deadletter.domain import settings as declared
from deadletter.domain.model import (
    DEFAULT_DEAD_LETTER_QUEUE,
    MAX_DESCRIPTION,
    MAX_ERROR_CLASS,
    MAX_ERROR_DETAILS,
    MAX_REDRIVE_ALLOW_SOURCES,
    MAX_TTL,
    RESERVED_ATTRIBUTE_PREFIX,
    Attribute,
    DeadLetterFilter,
    NewMessage,
    Overflow,
    QueueSettings,
)
from deadletter.domain.policies import (
    RedriveAllow,
    RedrivePermission,
    RetryPolicy,
)
from deadletter.domain.provenance import ErrorDetails, Reason
from deadletter.domain.templates import TemplateSettings
from deadletter.engine import fifo
from deadletter.storage.base import Transaction

# The most messages one claim hands out.
MAX_CLAIM_LIMIT = 1000
ATTRIBUTE_TYPES = ("String", "Number", "Binary")
# A redrive's bounds: its fastest pace (messages per second), the latest time a filter may
# name (epoch seconds, the year 5138), and how many message ids it may list.
MAX_REDRIVE_RATE = 1e6
MAX_EPOCH = 1e11
MAX_REDRIVE_IDS = 10_000
# The reasons a queue may route to a DLQ of their own.
REASONS = tuple(r.value for r in Reason)


def check_range(what: str, value: int | float, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise errors.OutOfRange(what=what, value=value, low=low, high=high)


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
    ttl = effective_ttl(s.default_ttl if new.ttl is None else new.ttl, s)
    delay = s.default_delay if new.delay is None else new.delay
    check_range("delay", delay, declared.DEFAULT_DELAY.low, declared.DEFAULT_DELAY.high)
    eligible = new.dead_letter_eligible
    if eligible is None:
        eligible = s.dead_letter_eligible
    return ttl, delay, eligible


def effective_ttl(ttl: int, s: QueueSettings) -> int:
    """The TTL a message gets under the queue's TTL model (see `QueueSettings.respect_ttl`):
    checked against the queue's floor, then kept, capped at `max_ttl`, or replaced by the
    engine's retention bound when the queue does not respect TTLs."""
    floor = s.min_ttl or 1
    if s.respect_ttl is None:
        check_range("message TTL", ttl, floor, s.max_ttl)
        return ttl
    check_range("message TTL", ttl, floor, MAX_TTL)
    return min(ttl, s.max_ttl) if s.respect_ttl else MAX_TTL


def check_redrive(where: DeadLetterFilter, rate: float | None) -> None:
    """A task is stored and then stepped by the background worker for every project, so
    nothing it holds may fail a later step: the pace and the times are finite and bounded."""
    if rate is not None and not (
        isinstance(rate, int | float) and math.isfinite(rate) and 0 < rate <= MAX_REDRIVE_RATE
    ):
        raise errors.InvalidInput(
            f"the rate must be a number of messages per second above 0 and at most"
            f" {MAX_REDRIVE_RATE:.0f}"
        )
    for name, when in (("since", where.since), ("until", where.until)):
        if when is not None and not (math.isfinite(when) and 0 <= when <= MAX_EPOCH):
            raise errors.InvalidInput(
                f"{name} must be a time between 1970 and epoch {MAX_EPOCH:.0f}"
            )
    texts = [where.source_queue or "", *(where.message_ids or ())]
    if any("\x00" in t for t in texts):
        raise errors.InvalidInput("a redrive filter may not contain NUL characters")
    if where.message_ids is not None and len(where.message_ids) > MAX_REDRIVE_IDS:
        raise errors.InvalidInput(f"a redrive may list at most {MAX_REDRIVE_IDS} message ids")


def check_claim(limit: int, grace: int) -> None:
    check_range("claim limit", limit, 1, MAX_CLAIM_LIMIT)
    check_range("grace", grace, 0, MAX_TTL)


def check_claim_ttl(what: str, seconds: int) -> None:
    """The one check of a span bounded as a claim's TTL is (a claim, its renewal, a
    visibility change, a nack's delay): the faces leave it to the engine and word its
    `OutOfRange` their own way."""
    check_range(what, seconds, declared.CLAIM_TTL.low, declared.CLAIM_TTL.high)


def check_declared(s: QueueSettings, among: tuple[declared.Setting, ...]) -> None:
    """Each of the settings `among` that `s` sets, within its declared range."""
    for setting in among:
        value = setting.value(s)
        if value is not None:
            check_range(setting.what, value, setting.low, setting.high)


def check_rejection(
    description: str | None, error: str | ErrorDetails | None
) -> ErrorDetails | None:
    """What a consumer may say when it dead-letters a message itself; the error as fields (one
    text is a message alone)."""
    if description is not None and len(description) > MAX_DESCRIPTION:
        raise errors.InvalidInput(f"description is longer than {MAX_DESCRIPTION} characters")
    details = ErrorDetails(message=error) if isinstance(error, str) else error
    if details is None:
        return None
    for name, value, most in (
        ("error details", details.message, MAX_ERROR_DETAILS),
        ("error class", details.error_class, MAX_ERROR_CLASS),
        ("error stack", details.stack, MAX_ERROR_DETAILS),
    ):
        if value is not None and len(value) > most:
            raise errors.InvalidInput(f"{name} are longer than {most} characters")
    return details


def checked_settings(tx: Transaction, project: str, name: str, s: QueueSettings) -> QueueSettings:
    """Validate settings against their ranges and the no-chain, no-cycle rules; a policy that
    passes is stored active."""
    check_declared(s, declared.QUEUE_SETTINGS)
    check_declared(s, declared.RETRY_SETTINGS)
    if s.overflow not in declared.OVERFLOW.choices:
        raise errors.InvalidInput(
            f"{declared.OVERFLOW.what} must be one of {', '.join(declared.OVERFLOW.choices)},"
            f" not {s.overflow!r}"
        )
    s = s.with_changes(overflow=Overflow(s.overflow))
    _check_retry(s.retry_policy)
    floor = declared.MIN_MESSAGE_TTL
    if s.min_ttl is not None:
        check_range(floor.what, s.min_ttl, floor.low, s.max_ttl)
    # Under respect-TTL the maximum caps the default as it caps any TTL.
    if s.respect_ttl is None and s.default_ttl > s.max_ttl:
        raise errors.InvalidInput(
            f"default message TTL ({s.default_ttl}) exceeds the maximum ({s.max_ttl})"
        )
    _check_redrive_allow(s.redrive_allow)
    fifo.check_settings(s, tx.get_queue(project, name))
    _check_policies(s)
    found = routing.targets(s)
    if name == DEFAULT_DEAD_LETTER_QUEUE and (found or s.dead_letter_default):
        raise errors.DeadLetterChainRefused(
            f"{name!r} is the default dead-letter queue, so it cannot have a dead-letter"
            " queue of its own (no chains)"
        )
    if not found:
        return s
    if name in tx.dead_letter_targets(project):
        raise errors.DeadLetterChainRefused(
            f"{name!r} is a dead-letter queue, so it cannot have a dead-letter policy, a"
            " route or a tag with a dead-letter queue (no chains)"
        )
    for target in found:
        _check_target(tx, project, name, s, target)
    return routing.activated(s)


def _check_policies(s: QueueSettings) -> None:
    """The policy's ranges, each route's reason, and each tag's own policy: its ranges, and
    a DLQ and a max claim count that it or the queue gives."""
    if s.dead_letter is not None:
        check_declared(s, declared.POLICY_SETTINGS)
    if s.dead_letter_routes and s.dead_letter is None:
        raise errors.InvalidInput(
            "dead-letter routes need the queue's dead-letter policy (its max claims and the"
            " dead-letter queue of the reasons no route names)"
        )
    for reason, route in s.dead_letter_routes.items():
        if reason not in REASONS:
            raise errors.InvalidInput(
                f"{reason!r} is not a dead-letter reason; routes name {', '.join(REASONS)}"
            )
        _check_reference(route.target)
    for tag, own in s.tag_policies.items():
        if own.max_claims is not None:
            what = f"tag {tag!r}'s {declared.MAX_CLAIMS.what}"
            check_range(what, own.max_claims, declared.MAX_CLAIMS.low, declared.MAX_CLAIMS.high)
        if own.retry_policy is not None:
            check_declared(QueueSettings(retry_policy=own.retry_policy), declared.RETRY_SETTINGS)
            _check_retry(own.retry_policy)
        if own.dead_letter_queue is not None:
            _check_reference(own.dead_letter_queue)
        if (own.max_claims is not None or own.dead_letter_queue is not None) and (
            routing.group_policy(s, tag) is None
        ):
            raise errors.InvalidInput(
                f"tag {tag!r} needs both a max claim count and a dead-letter queue, its own or"
                " the queue's"
            )


def _check_reference(name: str) -> None:
    if not isinstance(name, str) or not names.QUEUE_REFERENCE.valid(name):
        raise errors.InvalidInput(f"{name!r} is not the name of a queue")


def _check_target(
    tx: Transaction, project: str, name: str, s: QueueSettings, found: routing.Target
) -> None:
    """The no-chain and no-cycle rules for one DLQ that queue `name`'s settings `s` name."""
    if found.name == name:
        raise errors.DeadLetterChainRefused(
            f"queue {name!r} cannot be its own dead-letter queue ({found.what})"
        )
    target = tx.get_queue(project, found.name)
    if target is None:
        raise errors.DeadLetterTargetMissing(
            f"dead-letter queue {found.name!r} ({found.what}) does not exist; create it first"
        )
    fifo.check_dead_letter_type(name, s, target)
    if routing.active_targets(target.settings):
        raise errors.DeadLetterChainRefused(
            f"{found.name!r} has a dead-letter policy of its own, so it cannot be a"
            f" dead-letter queue ({found.what}; no chains)"
        )
    if not target.settings.redrive_allow.admits(name):
        raise errors.RedriveNotAllowed(
            f"the redrive-allow policy of {found.name!r} does not admit {name!r}"
        )


def _check_redrive_allow(allow: RedriveAllow) -> None:
    if allow.permission is RedrivePermission.BY_QUEUE:
        if not 1 <= len(allow.sources) <= MAX_REDRIVE_ALLOW_SOURCES:
            raise errors.InvalidInput(
                f"a byQueue redrive-allow policy lists 1 to {MAX_REDRIVE_ALLOW_SOURCES}"
                " source queues"
            )
    elif allow.sources:
        raise errors.InvalidInput("source queues can be listed only with byQueue")


def _check_retry(retry: RetryPolicy | None) -> None:
    if retry is not None and retry.minimum_backoff > retry.maximum_backoff:
        raise errors.InvalidInput(
            f"minimum backoff ({retry.minimum_backoff}) exceeds the maximum"
            f" ({retry.maximum_backoff})"
        )


def _check_template_names(name: str, pattern: str) -> None:
    if not names.TEMPLATE.valid(name):
        raise errors.InvalidInput(
            "template names are 1 to 64 ASCII letters, digits, underscores and dashes"
        )
    if not names.TEMPLATE_PATTERN.valid(pattern):
        raise errors.InvalidInput(
            "a template pattern is a glob of 1 to 128 characters: queue-name characters,"
            " '.', and the wildcards * ? [...] [!...]"
        )


def check_template(name: str, pattern: str, t: TemplateSettings) -> None:
    """A template's name, pattern and settings, checked as a queue's would be, so that it
    can only fail a queue's creation by naming a DLQ that is missing or refuses it."""
    _check_template_names(name, pattern)
    if t.max_claims is None:
        if t.dlq is not None or t.dlq_message_ttl is not None or t.on_expiry:
            raise errors.InvalidInput("a template's DLQ settings need its max claims")
    else:
        check_range(declared.MAX_CLAIMS.what, t.max_claims, *_range(declared.MAX_CLAIMS))
    if t.dlq is not None and not names.QUEUE_REFERENCE.valid(t.dlq):
        raise errors.InvalidInput(f"{t.dlq!r} is not the name of a queue")
    for setting, value in (
        (declared.DLQ_MESSAGE_TTL, t.dlq_message_ttl),
        (declared.DEFAULT_TTL, t.default_ttl),
        (declared.MAX_MESSAGE_TTL, t.max_ttl),
        (declared.MIN_MESSAGE_TTL, t.min_ttl),
    ):
        if value is not None:
            check_range(setting.what, value, *_range(setting))
    if t.retry_policy is not None:
        check_declared(QueueSettings(retry_policy=t.retry_policy), declared.RETRY_SETTINGS)
        _check_retry(t.retry_policy)
    if t.min_ttl is not None and t.max_ttl is not None and t.min_ttl > t.max_ttl:
        raise errors.InvalidInput("a template's minimum message TTL exceeds its maximum")
    for what, flag in (
        ("on_expiry", t.on_expiry),
        ("respect_ttl", t.respect_ttl),
        ("dead_letter_eligible", t.dead_letter_eligible),
    ):
        if flag is not None and not isinstance(flag, bool):
            raise errors.InvalidInput(f"{what} must be true or false")


def _range(setting: declared.Setting) -> tuple[int, int]:
    return setting.low, setting.high
