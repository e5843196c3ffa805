"""The options that give a queue's settings, shared by `queue create|update` and the template
commands: each declared once here, its range read from the setting's own declaration
(domain/settings.py). That is the engine's range; a face may narrow it for one queue (the
Zaqar face's TTL floor gives way to the queue's own `_min_message_ttl`), which the server
checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from deadletter.domain import settings as declared

# What click's option decorators take: a command's function, or the command.
FC = TypeVar("FC", bound=Callable[..., Any] | click.Command)

# The options that set one ranged setting: the setting and the option's help.
RANGED: dict[str, tuple[declared.Setting, str]] = {
    "--max-claims": (declared.MAX_CLAIMS, "Deliveries before a message moves to the DLQ."),
    "--dlq-ttl": (
        declared.DLQ_MESSAGE_TTL,
        "TTL of messages once in the DLQ, from the move (s); default: the DLQ's maximum TTL.",
    ),
    "--ttl": (declared.DEFAULT_TTL, "Default message TTL (s)."),
    "--max-ttl": (declared.MAX_MESSAGE_TTL, "Maximum message TTL (s)."),
    "--min-ttl": (declared.MIN_MESSAGE_TTL, "Minimum message TTL (s)."),
    "--claim-ttl": (declared.CLAIM_TTL, "Default claim TTL (s)."),
    "--delay": (declared.DEFAULT_DELAY, "Default delivery delay (s)."),
    "--max-messages": (
        declared.MAX_MESSAGES,
        "Bound the queue: at most this many messages, claimed and delayed included.",
    ),
    "--max-bytes": (
        declared.MAX_BYTES,
        "Bound the queue: at most this many bytes of message bodies.",
    ),
}


def setting_range(setting: declared.Setting) -> click.IntRange:
    """The values the engine takes."""
    return click.IntRange(setting.low, setting.high)


def ranged(flag: str) -> Callable[[FC], FC]:
    """The option `flag` of RANGED."""
    setting, help_text = RANGED[flag]
    return click.option(flag, type=setting_range(setting), help=help_text)


def max_redelivery() -> Callable[[FC], FC]:
    """--max-redelivery, Solace's count: --max-claims less one."""
    low, high = declared.MAX_CLAIMS.face_range(declared.MAX_REDELIVERY)
    return click.option(
        "--max-redelivery",
        type=click.IntRange(low, high),
        help="Redeliveries before the DLQ, as Solace counts them: --max-claims less one.",
    )


# The retry policy's options.
RETRY_OPTIONS = (
    click.option(
        "--retry-min-backoff",
        type=setting_range(declared.MINIMUM_BACKOFF),
        help="Retry policy: a message given back or whose claim lapses is hidden this"
        " long (s) after its first delivery, doubling after each one.",
    ),
    click.option(
        "--retry-max-backoff",
        type=setting_range(declared.MAXIMUM_BACKOFF),
        help="Retry policy: the longest it is hidden (s).",
    ),
)

# The TTL model and dead-letter eligibility switches; unset unless given.
TTL_MODEL_AND_ELIGIBILITY_OPTIONS = (
    click.option(
        "--respect-ttl/--no-respect-ttl",
        default=None,
        help="Expire messages by their TTL capped at --max-ttl, or never.",
    ),
    click.option(
        "--eligible/--not-eligible",
        default=None,
        help="Whether messages go to the DLQ unless the sender says otherwise.",
    ),
)


# Dead letters by reason: REASON=QUEUE, repeatable; REASON= removes that reason's route.
ROUTE_OPTION = click.option(
    "--dead-letter-route",
    "dead_letter_routes",
    multiple=True,
    metavar="REASON=QUEUE",
    help="Dead letters of REASON (max_claims, expired, rejected, delivery_failed, maxlen) go"
    " to QUEUE instead of the DLQ (repeatable; REASON= removes the route).",
)


def routes_of(values: dict[str, Any], current: dict[str, str] | None) -> None:
    """--dead-letter-route REASON=QUEUE as `values["dead_letter_routes"]`, over the `current`
    routes; None when none is given."""
    given = values.pop("dead_letter_routes", ()) or ()
    if not given:
        return
    routes = dict(current or {})
    for route in given:
        reason, sep, target = route.partition("=")
        if not sep or not reason:
            raise click.BadParameter(
                f"{route!r} is not REASON=QUEUE", param_hint="--dead-letter-route"
            )
        if target:
            routes[reason] = target
        else:
            routes.pop(reason, None)
    values["dead_letter_routes"] = routes


def retry_policy_of(values: dict[str, Any], current: dict[str, Any] | None) -> None:
    """--retry-min-backoff and --retry-max-backoff as `values["retry_policy"]`; the one left
    out is the `current` policy's, where there is one."""
    low, high = values.pop("retry_min_backoff", None), values.pop("retry_max_backoff", None)
    if low is None and high is None:
        return
    kept = current or {}
    low = kept.get("minimum_backoff") if low is None else low
    high = kept.get("maximum_backoff") if high is None else high
    if low is None or high is None:
        raise click.UsageError("A retry policy needs --retry-min-backoff and --retry-max-backoff.")
    if low > high:
        raise click.UsageError(f"--retry-min-backoff ({low}) exceeds --retry-max-backoff ({high}).")
    values["retry_policy"] = {"minimum_backoff": low, "maximum_backoff": high}
