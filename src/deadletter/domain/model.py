"""The domain's values: queues and their settings, messages, claims, redrive tasks and what
the engine's reads take and answer (policies, provenance and templates have modules of
their own)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar, dataclass_transform

from deadletter.domain.limits import QUEUES_PER_TENANT
from deadletter.domain.policies import (
    DeadLetterPolicy,
    DeadLetterRoute,
    GroupPolicy,
    RedriveAllow,
    RetryPolicy,
)
from deadletter.domain.provenance import Provenance, Reason

# Limits the engine enforces whatever the front end; faces may be narrower.
MAX_CLAIM_COUNT = 1000
# The most queues one project holds unless the server says otherwise (`serve --max-queues`):
# enough for an application, few enough that one credential cannot fill the store or /metrics.
DEFAULT_QUEUE_QUOTA = QUEUES_PER_TENANT
MIN_DLQ_MESSAGE_TTL = 60
MAX_TTL = 1_209_600
MAX_DELAY = 900
MAX_CLAIM_TTL = 43_200
# Pub/Sub's bound of a retry policy's backoffs.
MAX_BACKOFF = 600
# The largest bounds a queue may set on its messages and their bytes (`max_messages`,
# `max_bytes`): a 32-bit count, and JSON's largest exact integer.
MAX_QUEUE_LENGTH = 2_147_483_647
MAX_QUEUE_BYTES = 9_007_199_254_740_991
# The largest message the engine takes (SQS's limit since 2025); a queue's own maximum is
# at most this. Zaqar keeps its 256 KiB as both the default and its own ceiling.
MAX_MESSAGE_SIZE = 1_048_576
DEFAULT_MESSAGE_SIZE = 262_144
MAX_DESCRIPTION = 4_096
MAX_ERROR_DETAILS = 32_768
# An exception's class name (Kafka Connect's `exception.class.name`); its message and stack
# trace are each bounded by MAX_ERROR_DETAILS, as the error text is.
MAX_ERROR_CLASS = 1_024
MAX_REDRIVE_ALLOW_SOURCES = 10
# The failure patterns a DLQ keeps (the pipeline's results): how many, and their bytes as JSON,
# whether a client stores them whole or they are merged from batches of assignments.
MAX_PATTERNS = 1_000
MAX_PATTERNS_BYTES = 4 * 1024 * 1024
RESERVED_ATTRIBUTE_PREFIX = "DLQ."
SOURCE_QUEUE_ATTRIBUTE = "DLQ.sourceQueue"
# On a dead letter that one tag of its source queue gave up on: the tag's name.
SOURCE_TAG_ATTRIBUTE = "DLQ.sourceTag"
# The default dead-letter queue of every project (Solace's #DEAD_MSG_QUEUE): the DLQ of a
# queue that turns dead-lettering on without naming one (see docs/solace-model.md).
DEFAULT_DEAD_LETTER_QUEUE = "_dead_msg_queue"
# FIFO queues: a send repeating a deduplication id within this many seconds is not enqueued
# again; group and deduplication ids are 1-128 printable ASCII characters (as on SQS).
DEDUPLICATION_INTERVAL = 300
MAX_FIFO_ID = 128
DEDUPLICATION_SCOPES = ("queue", "messageGroup")
THROUGHPUT_LIMITS = ("perQueue", "perMessageGroupId")


class Overflow(enum.StrEnum):
    """What a bounded queue does with a send that would take it past its bound (RabbitMQ's
    `x-overflow`)."""

    DROP_HEAD = "drop-head"
    REJECT_PUBLISH = "reject-publish"
    REJECT_PUBLISH_DLX = "reject-publish-dlx"


@dataclass(frozen=True)
class QueueSettings:
    default_ttl: int = 3600
    max_ttl: int = MAX_TTL
    default_delay: int = 0
    claim_ttl: int = 30
    max_message_size: int = DEFAULT_MESSAGE_SIZE
    receive_wait: int = 0
    dead_letter_eligible: bool = True
    dead_letter: DeadLetterPolicy | None = None
    redrive_allow: RedriveAllow = field(default_factory=RedriveAllow)
    # Free-form data owned by the faces: Zaqar's user metadata, the SQS queue's labels (what
    # TagQueue sets; not consumer tags, below) and its opaque Policy.
    metadata: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)
    # Solace's TTL model. None: the message's TTL is kept and one above max_ttl is refused
    # (Zaqar and SQS); True: it is kept but capped at max_ttl, never refused; False: it is
    # ignored and the message stays for MAX_TTL, the engine's retention bound.
    respect_ttl: bool | None = None
    # The shortest message TTL the queue takes (the engine's floor is 1 s; None lets each
    # face keep its own, Zaqar's 60 s).
    min_ttl: int | None = None
    # Dead-letter to the default DLQ when the policy names none (removing a named DLQ goes
    # back to the default instead of turning dead-lettering off).
    dead_letter_default: bool = False
    # FIFO: order kept within a message group, sends deduplicated (see engine.fifo). Fixed
    # when the queue is created.
    fifo: bool = False
    content_based_deduplication: bool = False
    deduplication_scope: str = "queue"
    throughput_limit: str = "perQueue"
    # The names of the queue's consumer tags (deadletter.domain.tags), kept by the engine's
    # tag operations only: a queue without them takes none of the tags' paths.
    consumer_tags: tuple[str, ...] = ()
    # The backoff of a message given back without a delay (None: visible again at once).
    retry_policy: RetryPolicy | None = None
    # A bounded queue (RabbitMQ's x-max-length, x-max-length-bytes): at most this many
    # messages, at most this many bytes of bodies (None: no bound), counting every unexpired
    # message in the queue, visible, delayed or claimed; `overflow` says what a send past a
    # bound does (engine.bounds).
    max_messages: int | None = None
    max_bytes: int | None = None
    overflow: Overflow = Overflow.DROP_HEAD
    # Where dead letters of a reason (a `Reason` value) go instead of the policy's DLQ
    # (`domain.routing`); they need the policy.
    dead_letter_routes: dict[str, DeadLetterRoute] = field(default_factory=dict)
    # Consumer tags' own policies, by tag, kept by the engine's tag operations only, as
    # `consumer_tags` is.
    tag_policies: dict[str, GroupPolicy] = field(default_factory=dict)

    @property
    def bounded(self) -> bool:
        return self.max_messages is not None or self.max_bytes is not None

    def with_changes(self, **changes: Any) -> QueueSettings:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The stored form: every field by its name, in declaration order, so that a new
        field is stored without another edit here."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = _STORED_AS.get(f.name, _same)(value)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QueueSettings:
        """Settings from their stored form; a field stored before it existed takes its
        default."""
        if "tags" in data and "labels" not in data:  # stored before SQS tags were `labels`
            data = {**data, "labels": data["tags"]}
        return cls(
            **{
                f.name: _READ_AS.get(f.name, _same)(data[f.name])
                for f in fields(cls)
                if f.name in data
            }
        )


def _same(value: Any) -> Any:
    return value


# The fields whose stored form is not their value: written by `to_dict`, read by `from_dict`.
_STORED_AS: dict[str, Any] = {
    "dead_letter": lambda p: p.to_dict() if p else None,
    "redrive_allow": lambda a: a.to_dict(),
    "consumer_tags": list,
    "retry_policy": lambda p: p.to_dict() if p else None,
    "dead_letter_routes": lambda routes: {k: r.to_dict() for k, r in routes.items()},
    "tag_policies": lambda policies: {k: p.to_dict() for k, p in policies.items()},
}
_READ_AS: dict[str, Any] = {
    "dead_letter": lambda d: DeadLetterPolicy.from_dict(d) if d else None,
    "redrive_allow": lambda d: RedriveAllow.from_dict(d),
    "consumer_tags": tuple,
    "dead_letter_default": bool,
    "retry_policy": lambda d: RetryPolicy.from_dict(d) if d else None,
    "overflow": Overflow,
    "dead_letter_routes": lambda d: {k: DeadLetterRoute.from_dict(r) for k, r in d.items()},
    "tag_policies": lambda d: {k: GroupPolicy.from_dict(p) for k, p in d.items()},
}


@dataclass(frozen=True)
class Queue:
    project: str
    name: str
    settings: QueueSettings
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class Attribute:
    """A typed user attribute, as SQS has them: String, Number or Binary (value then base64).

    SQS's custom suffixes (`Number.float`) are kept in `type`.
    """

    type: str
    value: str

    def to_dict(self) -> dict[str, str]:
        return {"type": self.type, "value": self.value}


_Class = TypeVar("_Class")


@dataclass_transform(frozen_default=True)
def frozen_when_checked(cls: type[_Class]) -> type[_Class]:
    """A dataclass that the type checker holds frozen (mypy refuses an assignment to its
    fields) but that is plain at run time. For values built on every request: a frozen
    dataclass's `__init__` sets each field through `object.__setattr__`, five times the cost of
    a plain one. Equality is the dataclass's; such a value has no hash."""
    return dataclass(slots=True)(cls)


# Built several times in every request that moves a message: frozen only for the type
# checker (`./dev bench layers`: 9% of a Zaqar cycle). It never had a hash (`attributes` is a
# dict).
@frozen_when_checked
class Message:
    id: str
    queue: str
    seq: int
    body: bytes
    attributes: dict[str, Attribute]
    enqueued_at: float
    expires_at: float
    visible_at: float
    claim_id: str | None
    claim_expires_at: float | None
    claim_count: int
    first_claimed_at: float | None
    client_id: str | None
    dead_letter_eligible: bool
    provenance: Provenance | None = None
    # Earlier deaths and redrives, oldest first: each a dict with an "event" key.
    history: tuple[dict[str, Any], ...] = ()
    # Set while the message is held by its last allowed delivery: when that claim lapses
    # unacknowledged, the expiry sweep moves it to the DLQ (or drops it) without waiting
    # for another claim.
    dead_letter_due_at: float | None = None
    # FIFO queues: the message group (order is kept within it) and the deduplication id.
    group_id: str | None = None
    deduplication_id: str | None = None
    # When the message first became visible (sent, after its delay; dead-lettered; redriven):
    # what consumer tags go by, since `visible_at` is the queue's own consumers' state.
    ready_at: float | None = None
    # Set on a dead letter redriven to one consumer tag of its source: no one else sees it.
    only_tag: str | None = None

    def is_claimed(self, now: float) -> bool:
        return self.claim_id is not None and (self.claim_expires_at or 0) > now

    def ttl(self) -> int:
        return round(self.expires_at - self.enqueued_at)


@dataclass(frozen=True)
class NewMessage:
    """What a producer sends."""

    body: bytes
    ttl: int | None = None
    delay: int | None = None
    attributes: dict[str, Attribute] = field(default_factory=dict)
    dead_letter_eligible: bool | None = None
    # Required on a FIFO queue; on a standard one a group id is kept but orders nothing.
    group_id: str | None = None
    # On a FIFO queue without content-based deduplication, required.
    deduplication_id: str | None = None


@dataclass(frozen=True)
class Claim:
    id: str
    queue: str
    ttl: int
    grace: int
    created_at: float
    expires_at: float
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class DeadLetterFilter:
    """Selects messages in a DLQ; every field narrows, None means any. The filter language
    (`domain/filters.py` parses it, `engine/selection.py` applies it): the first fields are
    columns the store reads; `older_than`, `newer_than` and `pattern_id` the engine turns
    into them (`since`, `until`, `message_ids`) before the store sees the filter; the rest
    the engine evaluates on each dead letter the store returns."""

    source_queue: str | None = None
    reason: Reason | None = None
    since: float | None = None
    until: float | None = None
    message_ids: tuple[str, ...] | None = None
    source_tag: str | None = None
    # Seconds since the dead letter died: more than `older_than`, less than `newer_than`.
    older_than: float | None = None
    newer_than: float | None = None
    pattern_id: str | None = None
    # The error's class (as given, or named by a text error's last line); a substring and a
    # regular expression of the error's text (description, error, class, stack).
    error_class: str | None = None
    error_contains: str | None = None
    error_matches: str | None = None
    # Message attributes, (name, value) each; a value of None: the attribute is present.
    attributes: tuple[tuple[str, str | None], ...] = ()
    # A JMESPath expression over the body: selects where its result is truthy.
    body: str | None = None
    # How many times the message died (its history's deaths, this one included).
    min_deaths: int | None = None
    max_deaths: int | None = None
    # Sent back by this redrive task and dead again since: how a retried group is followed.
    redriven_by: str | None = None
    # A filter saved on the DLQ by this name: its fields narrow beside these (the engine
    # reads it where the filter is used, `engine/selection.py`).
    saved: str | None = None
    # Not of the language: sent back by automatic redrive fewer than this many times. The
    # filter of an automatic redrive's round (`domain/auto_redrive.py`), which its task keeps.
    auto_rounds_below: int | None = None

    def to_dict(self) -> dict[str, Any]:
        extra = {k: v for k, v in self._extra().items() if v not in (None, ())}
        if self.attributes:
            extra["attributes"] = [list(a) for a in self.attributes]
        return {
            "source_queue": self.source_queue,
            **({"source_tag": self.source_tag} if self.source_tag is not None else {}),
            "reason": self.reason.value if self.reason else None,
            "since": self.since,
            "until": self.until,
            "message_ids": list(self.message_ids) if self.message_ids is not None else None,
            **extra,
        }

    def _extra(self) -> dict[str, Any]:
        """The fields past the first six, as stored: only those set, so that a filter of the
        first six reads as it always has."""
        return {
            "older_than": self.older_than,
            "newer_than": self.newer_than,
            "pattern_id": self.pattern_id,
            "error_class": self.error_class,
            "error_contains": self.error_contains,
            "error_matches": self.error_matches,
            "attributes": self.attributes,
            "body": self.body,
            "min_deaths": self.min_deaths,
            "max_deaths": self.max_deaths,
            "redriven_by": self.redriven_by,
            "filter": self.saved,
            "auto_rounds_below": self.auto_rounds_below,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeadLetterFilter:
        ids = data.get("message_ids")
        return cls(
            source_queue=data.get("source_queue"),
            reason=Reason(data["reason"]) if data.get("reason") else None,
            since=data.get("since"),
            until=data.get("until"),
            message_ids=tuple(ids) if ids is not None else None,
            source_tag=data.get("source_tag"),
            older_than=data.get("older_than"),
            newer_than=data.get("newer_than"),
            pattern_id=data.get("pattern_id"),
            error_class=data.get("error_class"),
            error_contains=data.get("error_contains"),
            error_matches=data.get("error_matches"),
            attributes=tuple((a[0], a[1]) for a in data.get("attributes") or ()),
            body=data.get("body"),
            min_deaths=data.get("min_deaths"),
            max_deaths=data.get("max_deaths"),
            redriven_by=data.get("redriven_by"),
            saved=data.get("filter"),
            auto_rounds_below=data.get("auto_rounds_below"),
        )

    @property
    def in_engine(self) -> bool:
        """Whether some of it is evaluated on each dead letter rather than by the store."""
        return bool(
            self.error_class is not None
            or self.error_contains is not None
            or self.error_matches is not None
            or self.attributes
            or self.body is not None
            or self.min_deaths is not None
            or self.max_deaths is not None
            or self.redriven_by is not None
            or self.auto_rounds_below is not None
        )

    def for_store(self) -> DeadLetterFilter:
        """The part the store reads (the columns); the caller has resolved ages and pattern."""
        return DeadLetterFilter(
            source_queue=self.source_queue,
            reason=self.reason,
            since=self.since,
            until=self.until,
            message_ids=self.message_ids,
            source_tag=self.source_tag,
        )


@dataclass(frozen=True)
class QueueStats:
    free: int
    claimed: int
    delayed: int
    total: int
    oldest: Message | None
    newest: Message | None
    # On a source queue: how many left it for its DLQ, and how many expired and were dropped.
    dead_lettered: dict[str, int]
    expired_dropped: int
    acknowledged: int
    # On a DLQ: how many messages it holds from each source queue.
    by_source: dict[str, int]
    policy_active: bool | None
    # On a source queue: messages past their limit dropped because they were not eligible for
    # the DLQ, by reason (max_claims, expired).
    dropped: dict[str, int] = field(default_factory=dict)
    # On a source queue: messages due for the DLQ that its bound refused (overflow
    # reject-publish[-dlx]), kept in the source queue instead, by reason.
    dlq_full: dict[str, int] = field(default_factory=dict)
    # On a DLQ: how many of its dead letters expired and were dropped (of `expired_dropped`).
    dead_letters_expired: int = 0


@dataclass(frozen=True)
class ListQuery:
    """Which messages of one queue a listing returns, in sequence order."""

    after_seq: int = 0
    limit: int = 10
    include_claimed: bool = False
    include_delayed: bool = False
    exclude_client_id: str | None = None
    dead_letters: DeadLetterFilter | None = None
    max_seq: int | None = None
