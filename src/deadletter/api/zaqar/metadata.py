"""Zaqar queue metadata <-> engine queue settings: every reserved key is mapped here, once."""

from __future__ import annotations

import json
from typing import Any

from deadletter.api.strict_json import unknown_name
from deadletter.api.zaqar.errors import bad_request, out_of_range, shown
from deadletter.domain import model, names
from deadletter.domain import settings as declared
from deadletter.domain.model import Queue, QueueSettings
from deadletter.domain.policies import (
    DeadLetterPolicy,
    DeadLetterRoute,
    RedriveAllow,
    RedrivePermission,
    RetryPolicy,
)

# Zaqar's own lower bounds for TTLs (the engine allows shorter ones for SQS).
MIN_TTL = declared.ZAQAR_MIN_TTL
# The user keys of a queue's metadata, as JSON.
MAX_USER_METADATA = 65_536


def _key(setting: declared.Setting) -> str:
    assert setting.zaqar is not None
    return setting.zaqar.name


DEFAULT_TTL = _key(declared.DEFAULT_TTL)
MAX_POST_SIZE = _key(declared.MAX_MESSAGE_SIZE_SETTING)
DEFAULT_DELAY = _key(declared.DEFAULT_DELAY)
MAX_CLAIM_COUNT = _key(declared.MAX_CLAIMS)
DLQ = declared.DLQ_TARGET.zaqar
DLQ_TTL = _key(declared.DLQ_MESSAGE_TTL)
MAX_MESSAGE_TTL = _key(declared.MAX_MESSAGE_TTL)
ON_EXPIRY = "_dead_letter_on_expiry"
ELIGIBLE = "_dead_letter_eligible"
REDRIVE_ALLOW = "_redrive_allow"
POLICY_ACTIVE = "_dead_letter_policy_active"
ENCRYPT = "_enable_encrypt_messages"
# Solace's model (docs/solace-model.md): TTLs respected and capped, a lower TTL floor, and
# dead-lettering to the project's default DLQ when none is named.
RESPECT_TTL = "_respect_ttl"
MIN_MESSAGE_TTL = _key(declared.MIN_MESSAGE_TTL)
DLQ_DEFAULT = "_dead_letter_default"
# Solace's max redelivery: deliveries after the first, so always the max claim count less one.
# The stored setting stays the claim count; this key is read and written through it, here only.
MAX_REDELIVERY = declared.MAX_REDELIVERY.name
# FIFO queues (fixed at creation) and whether they derive deduplication ids from the body.
FIFO = "_fifo"
CONTENT_DEDUP = "_content_based_deduplication"
# Pub/Sub's retryPolicy: {"minimum_backoff": s, "maximum_backoff": s}.
RETRY_POLICY = declared.RETRY_POLICY.zaqar
# A bounded queue's overflow policy (its bounds, `_max_messages` and `_max_bytes`, are
# declared integers).
OVERFLOW = declared.OVERFLOW.zaqar
# Dead letters by reason: {"expired": queue, ...}; the reasons whose route's queue was
# deleted are listed, read only, beside them (they dead-letter nothing until set again).
ROUTES = declared.DLQ_ROUTES.zaqar
ROUTES_INACTIVE = "_dead_letter_routes_inactive"

READ_ONLY = frozenset({POLICY_ACTIVE, ROUTES_INACTIVE})
POLICY_KEYS = frozenset({MAX_CLAIM_COUNT, MAX_REDELIVERY, DLQ, DLQ_TTL, ON_EXPIRY, ROUTES})
# The declared settings whose key holds their value within the key's range, with no rule
# between keys (the TTLs have one: a queue's floor and maximum bound its default).
INTEGERS = tuple(
    d
    for d in declared.QUEUE_SETTINGS
    if d.zaqar is not None
    and d not in (declared.DEFAULT_TTL, declared.MAX_MESSAGE_TTL, declared.MIN_MESSAGE_TTL)
)
RESERVED = frozenset(
    {
        *(d.zaqar.name for d in declared.SETTINGS if d.zaqar is not None),
        ELIGIBLE,
        REDRIVE_ALLOW,
        ENCRYPT,
        RESPECT_TTL,
        DLQ_DEFAULT,
        FIFO,
        CONTENT_DEDUP,
        RETRY_POLICY,
        OVERFLOW,
        *POLICY_KEYS,
        *READ_ONLY,
    }
)

RESERVED_PREFIX = "_"

# A queue created through Zaqar gets Zaqar's defaults (SQS-created queues have SQS's).
ZAQAR_DEFAULTS = QueueSettings(default_ttl=3600, claim_ttl=300)


def check_queue_name(name: str) -> None:
    # Zaqar's alphabet for the queues it creates; a queue it refers to may also have been
    # made through SQS (whose names allow up to 80 characters and a `.fifo` suffix).
    if not names.QUEUE.valid(name):
        raise bad_request(
            f"Queue names may not be more than 64 characters long and may contain only"
            f" ASCII letters, digits, underscores and dashes, not {shown(name)}."
        )


def check_queue_reference(name: str) -> None:
    if not names.QUEUE_REFERENCE.valid(name):
        raise bad_request(f"{shown(name)} is not the name of a queue.")


def to_metadata(queue: Queue, every_key: bool = False) -> dict[str, Any]:
    """What GET returns, as Zaqar does: the user's keys, the three reserved keys Zaqar always
    fills in, and every other reserved key whose value is not what its absence means. No key is
    ever null: python-zaqarclient takes a null key for a present one and its
    `metadata(new_meta=...)` would add it and then remove it, losing a DLQ policy.

    With `every_key` (`?defaults=true`, for a client that shows every setting), every reserved
    key, its default where unset and null where it has none."""
    if every_key:
        return {**queue.settings.metadata, **_reserved(queue.settings)}
    return {
        **queue.settings.metadata,
        **{
            key: value
            for key, value in _reserved(queue.settings).items()
            if key in ALWAYS_SHOWN or (value is not None and value != _ABSENT[key])
        },
    }


def _reserved(s: QueueSettings) -> dict[str, Any]:
    """Every reserved key's value, None where the setting is unset."""
    policy = s.dead_letter
    return {
        **{d.zaqar.name: d.value(s) for d in declared.SETTINGS if d.zaqar is not None},
        MAX_REDELIVERY: policy.max_claims - 1 if policy else None,
        DLQ: policy.target if policy else None,
        ON_EXPIRY: policy.on_expiry if policy else None,
        ELIGIBLE: s.dead_letter_eligible,
        REDRIVE_ALLOW: s.redrive_allow.to_dict(),
        POLICY_ACTIVE: policy.active if policy else None,
        ENCRYPT: False,
        RESPECT_TTL: s.respect_ttl,
        DLQ_DEFAULT: s.dead_letter_default,
        FIFO: s.fifo,
        CONTENT_DEDUP: s.content_based_deduplication,
        RETRY_POLICY: s.retry_policy.to_dict() if s.retry_policy else None,
        OVERFLOW: s.overflow.value,
        ROUTES: {reason: r.target for reason, r in s.dead_letter_routes.items()},
        ROUTES_INACTIVE: sorted(k for k, r in s.dead_letter_routes.items() if not r.active),
    }


# Zaqar's GET fills in these three whether set or not.
ALWAYS_SHOWN = frozenset({MAX_POST_SIZE, DEFAULT_TTL, DEFAULT_DELAY})
# What each reserved key means when absent (a PATCH that removes it restores this value), so
# GET may leave out a key holding it and a client that sends GET's keys back changes nothing.
_ABSENT = _reserved(ZAQAR_DEFAULTS)


def ttl_floor(min_ttl: int | None) -> int:
    """The shortest message TTL a Zaqar client may give: the queue's own floor, else Zaqar's."""
    return MIN_TTL if min_ttl is None else min_ttl


def to_settings(metadata: dict[str, Any], base: QueueSettings = ZAQAR_DEFAULTS) -> QueueSettings:
    """Settings from a whole metadata document; a reserved key that is absent or null keeps
    its default. Ranges the engine checks (claim count, DLQ existence, chains) are left to it."""
    if not isinstance(metadata, dict):
        raise bad_request("Queue metadata must be a JSON object.")
    # Keys without `_` are the user's; one with it is a setting, and a misspelled setting kept
    # as a user key would leave the queue without the setting meant, without a word.
    refused = unknown_name(
        (k for k in metadata if k.startswith(RESERVED_PREFIX)), RESERVED, "reserved key"
    )
    if refused is not None:
        raise bad_request(f"{refused} Keys starting with {RESERVED_PREFIX} are settings.")
    m = _claims_from_redelivery({k: v for k, v in metadata.items() if k not in READ_ONLY})
    user = {k: v for k, v in m.items() if k not in RESERVED}
    if len(json.dumps(user, ensure_ascii=False).encode()) > MAX_USER_METADATA:
        raise bad_request(f"Queue metadata may not be larger than {MAX_USER_METADATA} bytes.")

    def get(key: str) -> Any:
        return m.get(key)

    if get(ENCRYPT) not in (None, False):
        raise bad_request(f"{ENCRYPT}: encryption of messages is not supported.")
    min_ttl = _optional_declared(declared.MIN_MESSAGE_TTL, m, base.min_ttl)
    floor = ttl_floor(min_ttl)
    respect_ttl = (
        base.respect_ttl
        if get(RESPECT_TTL) is None
        else _bool(RESPECT_TTL, get(RESPECT_TTL), False)
    )
    ttl_high = declared.MAX_MESSAGE_TTL.high
    max_ttl = _int(MAX_MESSAGE_TTL, get(MAX_MESSAGE_TTL), floor, ttl_high, base.max_ttl)
    # Under respect-TTL the maximum caps a longer default rather than refusing it.
    high = max_ttl if respect_ttl is None else ttl_high
    default_ttl = _int(DEFAULT_TTL, get(DEFAULT_TTL), floor, high, min(base.default_ttl, high))
    dead_letter_default = _bool(DLQ_DEFAULT, get(DLQ_DEFAULT), base.dead_letter_default)
    settings = base.with_changes(
        default_ttl=default_ttl,
        max_ttl=max_ttl,
        # Each in the range the face declares (a claim TTL in the engine's, as SQS's visibility
        # timeout, so that a queue made through SQS can be patched).
        **{d.field: _declared(d, m, getattr(base, d.field)) for d in INTEGERS},
        dead_letter_eligible=_bool(ELIGIBLE, get(ELIGIBLE), base.dead_letter_eligible),
        redrive_allow=_redrive_allow(get(REDRIVE_ALLOW)),
        dead_letter=_policy(m, base.dead_letter, dead_letter_default),
        metadata=user,
        respect_ttl=respect_ttl,
        min_ttl=min_ttl,
        dead_letter_default=dead_letter_default,
        fifo=_bool(FIFO, get(FIFO), base.fifo),
        content_based_deduplication=_bool(
            CONTENT_DEDUP, get(CONTENT_DEDUP), base.content_based_deduplication
        ),
        retry_policy=retry_policy(RETRY_POLICY, get(RETRY_POLICY), base.retry_policy),
        overflow=_choice(declared.OVERFLOW, get(OVERFLOW), base.overflow),
        dead_letter_routes=_routes(get(ROUTES), base.dead_letter_routes),
    )
    return settings


def _routes(value: Any, base: dict[str, DeadLetterRoute]) -> dict[str, DeadLetterRoute]:
    """The routes `_dead_letter_routes` states (reason -> queue name); which reasons there
    are is the engine's to check."""
    if value is None:
        return base
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise bad_request(f'{ROUTES} must be {{"<reason>": "<queue name>", ...}}.')
    for target in value.values():
        check_queue_reference(target)
    return {reason: DeadLetterRoute(target) for reason, target in value.items()}


def _claims_from_redelivery(m: dict[str, Any]) -> dict[str, Any]:
    """`m` with `_max_redelivery` stated as the max claim count it means (one more). Sent with
    `_max_claim_count`, the two must say the same; a PATCH keeps only the one it changed
    (`settle_redelivery`)."""
    redelivery = m.pop(MAX_REDELIVERY, None)
    if redelivery is None:
        return m
    low, high = declared.MAX_CLAIMS.face_range(declared.MAX_REDELIVERY)
    claims = _int(MAX_REDELIVERY, redelivery, low, high, 0) + 1
    if m.get(MAX_CLAIM_COUNT) not in (None, claims):
        raise bad_request(
            f"{MAX_REDELIVERY} ({redelivery}) is {MAX_CLAIM_COUNT} less one"
            f" ({m[MAX_CLAIM_COUNT]}): send one of them, or both agreeing."
        )
    return {**m, MAX_CLAIM_COUNT: claims}


def settle_redelivery(before: dict[str, Any], after: dict[str, Any]) -> None:
    """After a PATCH of the metadata `before` into `after`: of `_max_claim_count` and
    `_max_redelivery`, a changed one wins over the other left as it was read."""
    for changed, derived in ((MAX_CLAIM_COUNT, MAX_REDELIVERY), (MAX_REDELIVERY, MAX_CLAIM_COUNT)):
        if after.get(changed) != before.get(changed) and after.get(derived) == before.get(derived):
            after.pop(derived, None)


def _policy(
    m: dict[str, Any], base: DeadLetterPolicy | None, to_default: bool
) -> DeadLetterPolicy | None:
    """The policy the metadata states; `base` (a template's) when it states none. With
    `to_default`, a max claim count without a DLQ dead-letters to the default DLQ."""
    target, max_claims = m.get(DLQ), m.get(MAX_CLAIM_COUNT)
    if target is None and max_claims is None:
        for key in (DLQ_TTL, ON_EXPIRY):
            if m.get(key) not in (None, False):
                needs = declared.zaqar_names(declared.DLQ_MESSAGE_TTL.needs)
                raise bad_request(f"{key} needs {' and '.join(needs)}.")
        return base
    if target is None and to_default:
        target = model.DEFAULT_DEAD_LETTER_QUEUE
    if target is None or max_claims is None:
        target_key, count_key = declared.zaqar_names(declared.POLICY_MEMBERS)
        raise bad_request(
            f"{count_key} and {target_key} must be set together"
            f" ({DLQ_DEFAULT}: true lets {count_key} use the default DLQ)."
        )
    if not isinstance(target, str):
        raise bad_request(f"{DLQ} must be the name of a queue.")
    check_queue_reference(target)
    max_claims = _declared(declared.MAX_CLAIMS, m, 0)
    # Its range is the engine's to check (its words name the setting, not the key).
    ttl = m.get(DLQ_TTL)
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int)):
        raise bad_request(f"{DLQ_TTL} must be an integer number of seconds.")
    return DeadLetterPolicy(
        target=target,
        max_claims=max_claims,
        message_ttl=ttl,
        on_expiry=_bool(ON_EXPIRY, m.get(ON_EXPIRY), False),
    )


def retry_policy(key: str, value: Any, base: RetryPolicy | None) -> RetryPolicy | None:
    """The retry policy `key` (the metadata's, or a template's) states, each backoff in its
    declared range; the minimum above the maximum is the engine's to refuse."""
    if value is None:
        return base
    members = declared.members(RETRY_POLICY, "zaqar")
    if (
        not isinstance(value, dict)
        or set(value) != set(members)
        or any(v is None for v in value.values())
    ):
        shape = ", ".join(f'"{member}": seconds' for member in members)
        raise bad_request(f"{key} must be {{{shape}}}.")
    backoffs = {
        s.field.split(".")[1]: _int(f"{key}.{member}", value[member], s.low, s.high, 0)
        for member, s in members.items()
    }
    return RetryPolicy(**backoffs)


REDRIVE_FIELDS = frozenset({"permission", "sources"})


def _redrive_allow(value: Any) -> RedriveAllow:
    if value is None:
        return RedriveAllow()
    if isinstance(value, dict):
        refused = unknown_name(value, REDRIVE_FIELDS, f"{REDRIVE_ALLOW} field")
        if refused is not None:
            raise bad_request(refused)
    if not isinstance(value, dict) or "permission" not in value:
        raise bad_request(
            f'{REDRIVE_ALLOW} must be {{"permission": "allowAll"|"denyAll"|"byQueue",'
            ' "sources": [queue names]}.'
        )
    try:
        permission = RedrivePermission(value["permission"])
    except ValueError:
        raise bad_request(
            f"{REDRIVE_ALLOW}: permission must be allowAll, denyAll or byQueue."
        ) from None
    sources = value.get("sources") or []
    if not isinstance(sources, list) or not all(
        isinstance(s, str) and "\x00" not in s for s in sources
    ):
        raise bad_request(f"{REDRIVE_ALLOW}: sources must be a list of queue names.")
    return RedriveAllow(permission, tuple(sources))


def _int(key: str, value: Any, low: int, high: int, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise out_of_range(key, low, high, value)
    return value


def _declared(setting: declared.Setting, m: dict[str, Any], default: int) -> int:
    """The setting's value in the metadata, within the range the Zaqar face declares for it."""
    assert setting.zaqar is not None
    low, high = setting.face_range(setting.zaqar)
    return _int(setting.zaqar.name, m.get(setting.zaqar.name), low, high, default)


def _optional_declared(
    setting: declared.Setting, m: dict[str, Any], default: int | None
) -> int | None:
    assert setting.zaqar is not None
    return default if m.get(setting.zaqar.name) is None else _declared(setting, m, 0)


def _choice(choice: declared.Choice, value: Any, default: str) -> Any:
    if value is None:
        return default
    if value not in choice.choices:
        raise bad_request(
            f"{choice.zaqar} must be one of {', '.join(choice.choices)}, not {shown(value)}."
        )
    return value


def _bool(key: str, value: Any, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad_request(f"{key} must be true or false, not {shown(value)}.")
    return value
