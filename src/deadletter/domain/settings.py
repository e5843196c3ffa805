"""Every ranged queue setting declared once: its field, its words, its name on each face, its
range, and the settings it must come with. The engine's checks, both faces' mappings and the
OpenAPI document read their names and ranges from here.

A face may narrow a range (SQS takes messages of at least 1 KiB; Zaqar keeps its 256 KiB
ceiling), never widen it: the engine's range holds whatever the face.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deadletter.domain.model import (
    DEFAULT_MESSAGE_SIZE,
    MAX_BACKOFF,
    MAX_CLAIM_COUNT,
    MAX_CLAIM_TTL,
    MAX_DELAY,
    MAX_MESSAGE_SIZE,
    MAX_QUEUE_BYTES,
    MAX_QUEUE_LENGTH,
    MAX_TTL,
    MIN_DLQ_MESSAGE_TTL,
    Overflow,
    QueueSettings,
)

# The longest long poll a queue may ask for (SQS's ReceiveMessageWaitTimeSeconds).
MAX_RECEIVE_WAIT = 20
# SQS's own bounds where it is narrower than the engine.
SQS_MIN_RETENTION = 60
SQS_MIN_MESSAGE_SIZE = 1_024
SQS_MAX_MESSAGE_SIZE = 1_048_576  # since 2025
# Zaqar's lower bound of a TTL when the queue sets no floor of its own (`_min_message_ttl`).
ZAQAR_MIN_TTL = 60


@dataclass(frozen=True)
class Name:
    """A setting's name on one face, and the range that face takes when narrower. An SQS name
    `Attribute.member` is a member of a JSON attribute (`RedrivePolicy.maxReceiveCount`)."""

    name: str
    low: int | None = None
    high: int | None = None
    # Other fields the name sets to the same value.
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Setting:
    field: str  # the QueueSettings attribute; `dead_letter.<x>` for the policy's
    what: str  # in the engine's error messages
    low: int
    high: int
    zaqar: Name | None = None
    sqs: Name | None = None
    # Settings this one needs set with it (by field); the policy's target is `dead_letter.target`.
    needs: tuple[str, ...] = ()

    def value(self, s: QueueSettings) -> Any:
        """The setting's value in `s`; None when unset (a policy's, without a policy)."""
        owner: Any = s
        for part in self.field.split("."):
            owner = getattr(owner, part, None) if owner is not None else None
        return owner

    def face_range(self, face: Name) -> tuple[int, int]:
        return (
            self.low if face.low is None else face.low,
            self.high if face.high is None else face.high,
        )


DEFAULT_TTL = Setting(
    "default_ttl",
    "default message TTL",
    1,
    MAX_TTL,
    zaqar=Name("_default_message_ttl", low=ZAQAR_MIN_TTL),
    # Also the queue's maximum TTL: SQS has one retention period for both.
    sqs=Name("MessageRetentionPeriod", low=SQS_MIN_RETENTION, also=("max_ttl",)),
)
MAX_MESSAGE_TTL = Setting(
    "max_ttl", "maximum message TTL", 1, MAX_TTL, zaqar=Name("_max_message_ttl", low=ZAQAR_MIN_TTL)
)
MIN_MESSAGE_TTL = Setting(
    "min_ttl", "minimum message TTL", 1, MAX_TTL, zaqar=Name("_min_message_ttl")
)
DEFAULT_DELAY = Setting(
    "default_delay",
    "default delay",
    0,
    MAX_DELAY,
    zaqar=Name("_default_message_delay"),
    sqs=Name("DelaySeconds"),
)
CLAIM_TTL = Setting(
    "claim_ttl",
    "claim TTL",
    0,
    MAX_CLAIM_TTL,
    zaqar=Name("_default_claim_ttl"),
    sqs=Name("VisibilityTimeout"),
)
MAX_MESSAGE_SIZE_SETTING = Setting(
    "max_message_size",
    "maximum message size",
    1,
    MAX_MESSAGE_SIZE,
    zaqar=Name("_max_messages_post_size", high=DEFAULT_MESSAGE_SIZE),
    # Should the engine's limit ever be the smaller, it caps this face.
    sqs=Name(
        "MaximumMessageSize",
        low=SQS_MIN_MESSAGE_SIZE,
        high=min(SQS_MAX_MESSAGE_SIZE, MAX_MESSAGE_SIZE),
    ),
)
RECEIVE_WAIT = Setting(
    "receive_wait",
    "receive wait time",
    0,
    MAX_RECEIVE_WAIT,
    sqs=Name("ReceiveMessageWaitTimeSeconds"),
)
# A bounded queue (RabbitMQ's x-max-length and x-max-length-bytes); unset, no bound. Bytes
# are the bodies' bytes as the store keeps them.
MAX_MESSAGES = Setting(
    "max_messages",
    "maximum number of messages",
    1,
    MAX_QUEUE_LENGTH,
    zaqar=Name("_max_messages"),
    sqs=Name("MaxMessages"),
)
MAX_BYTES = Setting(
    "max_bytes",
    "maximum bytes of messages",
    1,
    MAX_QUEUE_BYTES,
    zaqar=Name("_max_bytes"),
    sqs=Name("MaxBytes"),
)
MAX_CLAIMS = Setting(
    "dead_letter.max_claims",
    "max claim count",
    1,
    MAX_CLAIM_COUNT,
    zaqar=Name("_max_claim_count"),
    sqs=Name("RedrivePolicy.maxReceiveCount"),
    needs=("dead_letter.target",),
)
# Solace's max redelivery on the Zaqar face: the max claim count less one (N redeliveries are
# N + 1 deliveries), so its range is the max claim count's less one.
MAX_REDELIVERY = Name("_max_redelivery", low=MAX_CLAIMS.low - 1, high=MAX_CLAIMS.high - 1)
DLQ_MESSAGE_TTL = Setting(
    "dead_letter.message_ttl",
    "dead-letter message TTL",
    MIN_DLQ_MESSAGE_TTL,
    MAX_TTL,
    zaqar=Name("_dead_letter_queue_messages_ttl"),
    needs=("dead_letter.target", "dead_letter.max_claims"),
)

# A retry policy's members (Pub/Sub's retryPolicy), each a member of one JSON key on each face,
# which parses them by hand (`api/zaqar/metadata.py`, `api/sqs/attributes.py`); both are
# given together, the minimum at most the maximum.
MINIMUM_BACKOFF = Setting(
    "retry_policy.minimum_backoff",
    "minimum backoff",
    0,
    MAX_BACKOFF,
    zaqar=Name("_retry_policy.minimum_backoff"),
    sqs=Name("RetryPolicy.minimumBackoff"),
)
MAXIMUM_BACKOFF = Setting(
    "retry_policy.maximum_backoff",
    "maximum backoff",
    0,
    MAX_BACKOFF,
    zaqar=Name("_retry_policy.maximum_backoff"),
    sqs=Name("RetryPolicy.maximumBackoff"),
)


@dataclass(frozen=True)
class Reference:
    """A setting without a range, named here for the settings that need it."""

    field: str
    zaqar: str
    sqs: str


@dataclass(frozen=True)
class Choice:
    """A setting that is one of a few words, the same on both faces."""

    field: str
    what: str
    zaqar: str
    sqs: str
    choices: tuple[str, ...]
    default: str


# What a bounded queue does past its bound (RabbitMQ's x-overflow, with its words).
OVERFLOW = Choice(
    "overflow",
    "overflow",
    "_overflow",
    "Overflow",
    tuple(o.value for o in Overflow),
    Overflow.DROP_HEAD.value,
)

DLQ_TARGET = Reference(
    "dead_letter.target", "_dead_letter_queue", "RedrivePolicy.deadLetterTargetArn"
)
# Dead letters by reason to DLQs of their own (reason -> queue; on SQS, reason -> ARN, an
# extension member of the redrive policy); they need the policy.
DLQ_ROUTES = Reference(
    "dead_letter_routes", "_dead_letter_routes", "RedrivePolicy.deadLetterRoutes"
)

# The queue's own ranged settings, in the order the engine checks them, then the policy's.
QUEUE_SETTINGS = (
    DEFAULT_TTL,
    MAX_MESSAGE_TTL,
    MIN_MESSAGE_TTL,
    DEFAULT_DELAY,
    CLAIM_TTL,
    MAX_MESSAGE_SIZE_SETTING,
    RECEIVE_WAIT,
    MAX_MESSAGES,
    MAX_BYTES,
)
# The bounds, each unset by default; a face removes one with its empty value.
OPTIONAL = (MAX_MESSAGES, MAX_BYTES)
POLICY_SETTINGS = (MAX_CLAIMS, DLQ_MESSAGE_TTL)
RETRY_SETTINGS = (MINIMUM_BACKOFF, MAXIMUM_BACKOFF)
# The key on each face holding the retry policy as one JSON object.
RETRY_POLICY = Reference("retry_policy", "_retry_policy", "RetryPolicy")


def members(key: str, face: str) -> dict[str, Setting]:
    """The retry policy's members under `key` on `face` ("zaqar" or "sqs"), by member name."""
    out = {}
    for setting in RETRY_SETTINGS:
        name: Name | None = getattr(setting, face)
        assert name is not None
        out[name.name.removeprefix(key + ".")] = setting
    return out


SETTINGS = QUEUE_SETTINGS + POLICY_SETTINGS
BY_SQS_NAME = {s.sqs.name: s for s in SETTINGS if s.sqs is not None}


def _declared(field: str) -> Setting | Reference:
    if field == DLQ_TARGET.field:
        return DLQ_TARGET
    (setting,) = (s for s in SETTINGS if s.field == field)
    return setting


def zaqar_names(fields: tuple[str, ...]) -> tuple[str, ...]:
    """The Zaqar metadata keys of these settings."""
    out = []
    for field in fields:
        declared = _declared(field)
        name = declared.zaqar
        assert name is not None
        out.append(name if isinstance(name, str) else name.name)
    return tuple(out)


def sqs_names(fields: tuple[str, ...]) -> tuple[str, ...]:
    """The SQS names of these settings (`Attribute.member` for a member of a JSON attribute)."""
    out = []
    for field in fields:
        declared = _declared(field)
        name = declared.sqs
        assert name is not None
        out.append(name if isinstance(name, str) else name.name)
    return tuple(out)


# A dead-letter policy: the max claims and the settings it must come with.
POLICY_MEMBERS = (*MAX_CLAIMS.needs, MAX_CLAIMS.field)
