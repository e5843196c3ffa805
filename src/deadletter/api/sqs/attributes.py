"""The SQS view of a queue: its attributes <-> the engine's settings, ARNs and URLs.

The mapping (also in docs/sqs.md); the integer ones, with their ranges, follow the declarations
in domain/settings.py:

    VisibilityTimeout              claim TTL
    MessageRetentionPeriod         default and maximum message TTL
    DelaySeconds                   default delay
    MaximumMessageSize             maximum message size
    ReceiveMessageWaitTimeSeconds  receive wait (long polling by default)
    RedrivePolicy                  dead-letter policy (target, maxReceiveCount = max claims;
                                   deadLetterRoutes, an extension: reason -> DLQ ARN)
    RedriveAllowPolicy             the DLQ's redrive-allow policy
    RetryPolicy                    retry backoff (minimumBackoff, maximumBackoff in seconds)
    Policy and the SSE/KMS names   kept as given (opaque)
    DeadLetterEligible, RespectTtl, MinimumMessageTtl
                                   Solace's model (extensions): eligibility default, TTL model
    MaxMessages, MaxBytes, Overflow
                                   a bounded queue (extensions, RabbitMQ's x-max-length,
                                   x-max-length-bytes and x-overflow)
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from deadletter.api.sqs import fifo as sqs_fifo
from deadletter.api.sqs.errors import (
    invalid_attribute_name,
    invalid_attribute_value,
    invalid_parameter,
    invalid_value,
)
from deadletter.api.strict_json import InvalidJson, loads
from deadletter.domain import names
from deadletter.domain import settings as declared
from deadletter.domain.model import Queue, QueueSettings, QueueStats
from deadletter.domain.policies import (
    DeadLetterPolicy,
    DeadLetterRoute,
    RedriveAllow,
    RedrivePermission,
    RetryPolicy,
)

DEFAULT_RETENTION = 345_600  # SQS's default: 4 days
# SQS takes messages (and batches) of up to 1 MiB since 2025, as the engine does.
SQS_MAX_MESSAGE_SIZE = declared.SQS_MAX_MESSAGE_SIZE
MAX_POLICY = 8_192  # bytes of a queue's access policy
MAX_OPAQUE = 2_048  # KmsMasterKeyId and the like
MAX_RECEIVE_WAIT = declared.MAX_RECEIVE_WAIT
# AWS's wording, its typographic apostrophe included.
REDRIVE_ALLOW_FORMAT = (
    "Amazon SQS can't create the redrive allow policy, as it\u2019s in an unsupported format."
)


def arn_format(parameter: str) -> str:
    return (
        f"You must use this format to specify the {parameter}:"
        " arn:<partition>:<service>:<region>:<account-id>:<resource-id>"
    )


OPAQUE = ("Policy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled")
# The declared settings an attribute of its own holds (domain/settings.py), one integer each.
INTEGERS = {name: s for name, s in declared.BY_SQS_NAME.items() if "." not in name}
# Solace's model on this face (docs/sqs.md), extensions named like the `DeadLetterEligible`
# message attribute: the queue's flags ("true"/"false"; RespectTtl "" when unset) and its TTL
# floor ("" when unset). Each is shown only when not what its absence means, so a queue that
# uses none of them reads as on AWS.
SOLACE_FLAGS = {"DeadLetterEligible": "dead_letter_eligible", "RespectTtl": "respect_ttl"}
MIN_TTL = "MinimumMessageTtl"
SOLACE_ABSENT = {"DeadLetterEligible": "true", "RespectTtl": "", MIN_TTL: ""}
RETRY_POLICY = declared.RETRY_POLICY.sqs
# A bounded queue (extensions): its bounds, "" when unset, and its overflow policy; shown only
# where the queue is bounded or its policy is not the default, so an unbounded queue reads as
# on AWS.
BOUNDS = {s.sqs.name for s in declared.OPTIONAL if s.sqs is not None}
OVERFLOW = declared.OVERFLOW.sqs
SETTABLE = (
    *INTEGERS,
    "RedrivePolicy",
    "RedriveAllowPolicy",
    RETRY_POLICY,
    OVERFLOW,
    *OPAQUE,
    *SOLACE_ABSENT,
)
READ_ONLY = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
    "QueueArn",
)
# The queue settings' ranges as this face takes them (docs/sqs.md), and an opaque attribute's.
RANGES = {
    **{name: s.face_range(s.sqs) for name, s in INTEGERS.items() if s.sqs is not None},
    "KmsDataKeyReusePeriodSeconds": (60, 86_400),
}
MAX_SIZE = RANGES["MaximumMessageSize"][1]
MAX_RECEIVE_COUNT = declared.MAX_CLAIMS


def arn(region: str, account: str, name: str) -> str:
    return f"arn:aws:sqs:{region}:{account}:{name}"


def parse_arn(
    value: str, account: str, parameter: str = "SourceArn", region: str | None = None
) -> str:
    """The queue name of an SQS ARN of `account` (and of `region` when given: queues of
    other regions are other queues)."""
    if not isinstance(value, str):
        raise invalid_parameter(arn_format(parameter))
    parts = value.split(":")
    if len(parts) != 6 or parts[:3] != ["arn", "aws", "sqs"] or not parts[5]:
        raise invalid_parameter(arn_format(parameter))
    if region is not None and parts[3] != region:
        raise invalid_value(
            value, parameter, f"The queue is in another region than the request's ({region})."
        )
    if parts[4] != account:
        raise invalid_parameter(
            f"Value {value} for parameter is invalid. Reason: the queue belongs to another"
            f" account than {account}."
        )
    return parts[5]


def check_name(name: str) -> None:
    """1 to 80 characters, a FIFO queue's `.fifo` included (sqs.fifo checks the type)."""
    if not names.SQS_QUEUE.valid(name):
        raise invalid_parameter(
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"
        )


def bare_name(name: str) -> str:
    """An attribute name without the whitespace around it, which other SQS implementations
    ignore and clients' suites send (docs/sqs.md); whitespace inside a name is kept."""
    return name.strip()


def named(attributes: dict[str, Any]) -> dict[str, Any]:
    """An Attributes map by bare names."""
    return {bare_name(k) if isinstance(k, str) else k: v for k, v in attributes.items()}


def compact(doc: dict[str, Any]) -> str:
    """JSON as AWS writes a policy attribute: no spaces."""
    return json.dumps(doc, separators=(",", ":"))


def _int_value(name: str, raw: Any) -> int:
    try:
        value = int(str(raw))
    except ValueError:
        raise invalid_attribute_value(name) from None
    low, high = RANGES[name]
    if not low <= value <= high:
        raise invalid_attribute_value(name)
    return value


def _json_value(name: str, raw: Any) -> dict[str, Any]:
    try:
        doc = loads(raw) if isinstance(raw, str) else raw
    except InvalidJson:
        raise invalid_attribute_value(name) from None
    if not isinstance(doc, dict):
        raise invalid_attribute_value(name)
    return doc


def apply(
    settings: QueueSettings, attributes: dict[str, Any], region: str, account: str
) -> QueueSettings:
    """`settings` with SQS `attributes` applied; unknown or read-only names are refused."""
    changes: dict[str, Any] = {}
    extra = dict(settings.extra)
    for name, raw in attributes.items():
        if not isinstance(raw, str):
            raise invalid_attribute_value(name)
        if name not in SETTABLE and name not in sqs_fifo.ATTRIBUTES:
            raise invalid_attribute_name(name)
        stated = _settings_stated(settings, name, raw, region=region, account=account)
        if stated is not None:
            changes.update(stated)
        elif name == "Policy" and raw == "":
            extra.pop(name, None)  # an empty policy removes it, as on AWS
        else:
            extra[name] = _opaque(name, raw)
    return replace(settings, **changes, extra=extra)


def _settings_stated(
    settings: QueueSettings, name: str, raw: str, *, region: str, account: str
) -> dict[str, Any] | None:
    """The settings a settable attribute states; None for one kept as it is sent."""
    setting = INTEGERS.get(name)
    if name in sqs_fifo.ATTRIBUTES:
        return sqs_fifo.changes(name, raw)
    if name in BOUNDS and raw == "" and setting is not None:
        return {setting.field: None}  # an empty value removes a bound
    if setting is not None and setting.sqs is not None:
        return dict.fromkeys((setting.field, *setting.sqs.also), _int_value(name, raw))
    if name in SOLACE_ABSENT:
        return _solace(name, raw)
    if name == "RedrivePolicy":
        policy = _redrive_policy(settings.dead_letter, raw, account, region)
        routes = _routes(raw, settings, account, region) if policy is not None else {}
        return {"dead_letter": policy, declared.DLQ_ROUTES.field: routes}
    if name == "RedriveAllowPolicy":
        return {"redrive_allow": _redrive_allow(raw, account, region)}
    if name == RETRY_POLICY:
        return {"retry_policy": _retry_policy(raw)}
    if name == OVERFLOW:
        if raw not in declared.OVERFLOW.choices:
            raise invalid_attribute_value(name)
        return {declared.OVERFLOW.field: raw}
    return None


def _solace(name: str, raw: str) -> dict[str, Any]:
    """The setting a Solace attribute states; the engine checks the TTL floor against the
    queue's maximum."""
    if name == MIN_TTL:
        floor = declared.MIN_MESSAGE_TTL
        if raw == "":
            return {floor.field: None}
        try:
            value = int(raw)
        except ValueError:
            raise invalid_attribute_value(name) from None
        if not floor.low <= value <= floor.high:
            raise invalid_attribute_value(name)
        return {floor.field: value}
    flag = raw.lower()
    if flag == "" and name == "RespectTtl":
        return {SOLACE_FLAGS[name]: None}
    if flag not in ("true", "false"):
        raise invalid_attribute_value(name)
    return {SOLACE_FLAGS[name]: flag == "true"}


def _solace_view(s: QueueSettings) -> dict[str, str]:
    shown = {
        "DeadLetterEligible": str(s.dead_letter_eligible).lower(),
        "RespectTtl": "" if s.respect_ttl is None else str(s.respect_ttl).lower(),
        MIN_TTL: "" if s.min_ttl is None else str(s.min_ttl),
    }
    return {k: v for k, v in shown.items() if v != SOLACE_ABSENT[k]}


def _opaque(name: str, raw: str) -> str:
    """An attribute kept as given, once it is of the form and size SQS accepts."""
    if name == "Policy":
        if len(raw.encode()) > MAX_POLICY:
            raise invalid_attribute_value(name)
        if raw:
            _json_value(name, raw)
    elif name == "KmsDataKeyReusePeriodSeconds":
        _int_value(name, raw)
    elif name == "SqsManagedSseEnabled":
        if raw.lower() not in ("true", "false"):
            raise invalid_attribute_value(name)
        raw = raw.lower()
    elif len(raw) > MAX_OPAQUE:
        raise invalid_attribute_value(name)
    return raw


def _redrive_policy(current: DeadLetterPolicy | None, raw: Any, account: str, region: str) -> Any:
    if raw in ("", None, "{}"):
        return None
    doc = _json_value("RedrivePolicy", raw)
    unknown = next((k for k in doc if k not in REDRIVE_MEMBERS), None)
    if unknown is not None:
        raise invalid_value(
            raw, "RedrivePolicy", f"Redrive policy contains unknown attribute: {unknown}."
        )
    target_arn = doc.get("deadLetterTargetArn")
    count = doc.get("maxReceiveCount")
    for name in declared.sqs_names(declared.POLICY_MEMBERS):
        member = name.partition(".")[2]
        if doc.get(member) is None:
            raise invalid_value(
                raw,
                "RedrivePolicy",
                f"Redrive policy does not contain mandatory attribute: {member}.",
            )
    try:
        max_claims = int(str(count))
    except ValueError:
        max_claims = 0
    low, high = MAX_RECEIVE_COUNT.low, MAX_RECEIVE_COUNT.high
    if not low <= max_claims <= high:
        raise invalid_value(
            raw,
            "RedrivePolicy",
            f"Invalid value for maxReceiveCount: {count}, valid values are from {low} to"
            f" {high} both inclusive.",
        )
    if not isinstance(target_arn, str) or len(target_arn.split(":")) != 6:
        raise invalid_value(raw, "RedrivePolicy", "Invalid value for deadLetterTargetArn.")
    target = parse_arn(target_arn, account, "deadLetterTargetArn", region)
    # The dead-letter extensions Zaqar can set survive an SQS update of the policy.
    kept = current if current is not None and current.target == target else None
    return DeadLetterPolicy(
        target=target,
        max_claims=max_claims,
        message_ttl=kept.message_ttl if kept else None,
        on_expiry=kept.on_expiry if kept else False,
    )


# The redrive policy's members: AWS's, and the routes by reason (an extension).
ROUTES = declared.DLQ_ROUTES.sqs.partition(".")[2]
REDRIVE_MEMBERS = (
    *(n.partition(".")[2] for n in declared.sqs_names(declared.POLICY_MEMBERS)),
    ROUTES,
)


def _routes(
    raw: str, settings: QueueSettings, account: str, region: str
) -> dict[str, DeadLetterRoute]:
    """The routes `deadLetterRoutes` states ({"<reason>": "<DLQ ARN>"}); left out, those
    the queue has stay (as the policy's Zaqar extensions do); `{}` removes them. Which
    reasons there are is the engine's to check."""
    doc = _json_value("RedrivePolicy", raw)
    value = doc.get(ROUTES)
    if value is None:
        return settings.dead_letter_routes
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise invalid_value(
            raw, "RedrivePolicy", f'{ROUTES} must be {{"<reason>": "<queue ARN>", ...}}.'
        )
    return {
        reason: DeadLetterRoute(parse_arn(target, account, ROUTES, region))
        for reason, target in value.items()
    }


def _retry_policy(raw: str) -> RetryPolicy | None:
    """Both backoffs, whole seconds in their declared range; "" or "{}" removes the policy.
    The minimum above the maximum is the engine's to refuse."""
    if raw in ("", "{}"):
        return None
    doc = _json_value(RETRY_POLICY, raw)
    members = declared.members(RETRY_POLICY, "sqs")
    backoffs = {}
    for member, setting in members.items():
        value = doc.get(member)
        try:
            seconds = int(str(value)) if isinstance(value, int | str) else -1
        except ValueError:
            seconds = -1
        if (
            isinstance(value, bool)
            or set(doc) != set(members)
            or not setting.low <= seconds <= setting.high
        ):
            raise invalid_value(
                raw,
                RETRY_POLICY,
                f"{RETRY_POLICY} must be {{{', '.join(members)}}}, each {setting.low} to"
                f" {setting.high} seconds.",
            )
        backoffs[setting.field.split(".")[1]] = seconds
    return RetryPolicy(**backoffs)


def _redrive_allow(raw: Any, account: str, region: str) -> RedriveAllow:
    if raw in ("", None):
        return RedriveAllow()
    doc = _json_value("RedriveAllowPolicy", raw)
    try:
        permission = RedrivePermission(str(doc.get("redrivePermission")))
    except ValueError:
        raise invalid_value(
            raw,
            "RedriveAllowPolicy",
            REDRIVE_ALLOW_FORMAT,
        ) from None
    arns = doc.get("sourceQueueArns", [])
    if not isinstance(arns, list):
        raise invalid_value(
            raw,
            "RedriveAllowPolicy",
            REDRIVE_ALLOW_FORMAT,
        )
    return RedriveAllow(
        permission, tuple(parse_arn(str(a), account, "sourceQueueArns", region) for a in arns)
    )


def view(queue: Queue, stats: QueueStats | None, region: str, account: str) -> dict[str, str]:
    """Every attribute of a queue as SQS returns them (strings)."""
    s = queue.settings
    out = {
        "QueueArn": arn(region, account, queue.name),
        **{
            name: str(setting.value(s))
            for name, setting in INTEGERS.items()
            if setting.value(s) is not None
        },
        "CreatedTimestamp": str(int(queue.created_at)),
        "LastModifiedTimestamp": str(int(queue.updated_at)),
        "SqsManagedSseEnabled": "false",
    }
    if stats is not None:
        out["ApproximateNumberOfMessages"] = str(stats.free)
        out["ApproximateNumberOfMessagesNotVisible"] = str(stats.claimed)
        out["ApproximateNumberOfMessagesDelayed"] = str(stats.delayed)
    if s.dead_letter is not None:
        routes = {k: arn(region, account, r.target) for k, r in s.dead_letter_routes.items()}
        out["RedrivePolicy"] = compact(
            {
                "deadLetterTargetArn": arn(region, account, s.dead_letter.target),
                "maxReceiveCount": s.dead_letter.max_claims,
                **({ROUTES: routes} if routes else {}),
            }
        )
    if s.retry_policy is not None:
        policy = s.retry_policy.to_dict()
        out[RETRY_POLICY] = compact(
            {
                m: policy[d.field.split(".")[1]]
                for m, d in declared.members(RETRY_POLICY, "sqs").items()
            }
        )
    if s.redrive_allow != RedriveAllow():
        allow: dict[str, Any] = {"redrivePermission": s.redrive_allow.permission.value}
        if s.redrive_allow.sources:
            allow["sourceQueueArns"] = [arn(region, account, q) for q in s.redrive_allow.sources]
        out["RedriveAllowPolicy"] = compact(allow)
    if s.bounded or s.overflow != declared.OVERFLOW.default:
        out[OVERFLOW] = s.overflow.value
    out.update(sqs_fifo.view(s))
    out.update(_solace_view(s))
    out.update(s.extra)
    return out


def select(names: list[str], available: dict[str, str]) -> dict[str, str]:
    """The attributes asked for (`All` for every one); unknown names are refused."""
    if not names or "All" in names:
        return available
    known = set(SETTABLE) | set(READ_ONLY) | set(sqs_fifo.ATTRIBUTES)
    for name in names:
        if name not in known:
            raise invalid_attribute_name(name)
    return {n: available[n] for n in names if n in available}


# Message attributes --------------------------------------------------------------------
