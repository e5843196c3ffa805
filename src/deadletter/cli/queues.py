"""`deadletter queue ...`: create, update, list, show and delete queues."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import click

from deadletter.cli.output import (
    NAMED,
    SHORT_DEAD_LETTER_LIFE,
    F,
    Failure,
    echo,
    json_option,
    oldest_expiry,
    print_json,
    print_table,
    server_options,
)
from deadletter.cli.setting_options import (
    RETRY_OPTIONS,
    ROUTE_OPTION,
    TTL_MODEL_AND_ELIGIBILITY_OPTIONS,
    max_redelivery,
    ranged,
    retry_policy_of,
    routes_of,
)
from deadletter.cli.templates import KEYS as TEMPLATE_KEYS
from deadletter.client import Client
from deadletter.domain import settings as declared
from deadletter.domain.model import Overflow


@click.group()
def queue() -> None:
    """Create, update, list, show and delete queues."""


@dataclass(frozen=True)
class Setting:
    """A queue setting as the command line names it, its metadata key and how `queue show`
    says its value."""

    option: str
    key: str
    label: str
    unit: str = ""


# Every setting `queue create` and `queue update` take, in the order `queue show` lists them.
SETTINGS = (
    Setting("dlq", "_dead_letter_queue", "dead-letter queue"),
    Setting("max_claims", "_max_claim_count", "deliveries before the DLQ"),
    Setting("dlq_ttl", "_dead_letter_queue_messages_ttl", "TTL in the DLQ", "s"),
    Setting("dead_letter_on_expiry", "_dead_letter_on_expiry", "expired messages to the DLQ"),
    Setting("default_dlq", "_dead_letter_default", "the project's default DLQ if none named"),
    Setting("dead_letter_routes", "_dead_letter_routes", "dead letters by reason to"),
    Setting("redrive_allow", "_redrive_allow", "may be the DLQ of"),
    Setting("ttl", "_default_message_ttl", "default message TTL", "s"),
    Setting("max_ttl", "_max_message_ttl", "maximum message TTL", "s"),
    Setting("min_ttl", "_min_message_ttl", "minimum message TTL", "s"),
    Setting("respect_ttl", "_respect_ttl", "respect each message's TTL"),
    Setting("claim_ttl", "_default_claim_ttl", "default claim TTL", "s"),
    Setting("delay", "_default_message_delay", "default delivery delay", "s"),
    Setting("eligible", "_dead_letter_eligible", "messages may be dead-lettered"),
    Setting("max_messages", "_max_messages", "most messages held", "messages"),
    Setting("max_bytes", "_max_bytes", "most bytes held", "bytes"),
    Setting("overflow", "_overflow", "a send past a bound"),
    # Given as --retry-min-backoff and --retry-max-backoff (`templates.retry_policy_of`).
    Setting("retry_policy", declared.RETRY_POLICY.zaqar, "backoff of a message given back"),
)
BY_OPTION = {s.option: s for s in SETTINGS}
# What `queue show` also says, read-only here (--max-redelivery is said as --max-claims).
SHOWN = (
    Setting("", "_dead_letter_policy_active", "dead-letter policy active"),
    Setting("", "_dead_letter_routes_inactive", "routes whose queue is deleted (inactive)"),
    Setting("", "_max_redelivery", "redeliveries before the DLQ (Solace)"),
    Setting("", "_max_messages_post_size", "largest message", "bytes"),
    Setting("", "_fifo", "FIFO"),
    Setting("", "_content_based_deduplication", "deduplication by content"),
)
# The keys a dead-letter policy is made of: `--no-dlq` removes them together.
POLICY = (
    "dlq", "max_claims", "dlq_ttl", "dead_letter_on_expiry", "default_dlq", "dead_letter_routes",
)  # fmt: skip
# Settings `--reset` returns to their defaults (the policy's go with --no-dlq).
RESETTABLE = (
    "redrive_allow", "ttl", "max_ttl", "min_ttl", "respect_ttl", "claim_ttl", "delay", "eligible",
    "max_messages", "max_bytes", "overflow", "dead_letter_routes",
)  # fmt: skip
# What a bounded queue does past its bound, in words short enough for a terminal's table, then
# its name (RabbitMQ's x-overflow): the oldest leave for the DLQ or are dropped and counted;
# the send is refused; or refused and the refused messages dead-lettered.
OVERFLOW_SAID = {
    Overflow.DROP_HEAD: "the oldest leave",
    Overflow.REJECT_PUBLISH: "refuse the send",
    Overflow.REJECT_PUBLISH_DLX: "refuse, to the DLQ",
}


def _redrive_allow(value: str | None) -> dict[str, Any] | None:
    """`any`, `none` or a comma-separated list of queues, as Zaqar's _redrive_allow."""
    if value is None:
        return None
    if value == "any":
        return {"permission": "allowAll", "sources": []}
    if value == "none":
        return {"permission": "denyAll", "sources": []}
    sources = [q.strip() for q in value.split(",") if q.strip()]
    if not sources:
        raise click.BadParameter("any, none, or queue names separated by commas")
    return {"permission": "byQueue", "sources": sources}


def policy_options(command: F) -> F:
    """The options `queue create` and `queue update` share."""
    options = [
        click.option("--dlq", help="The dead-letter queue (it must exist)."),
        ranged("--max-claims"),
        max_redelivery(),
        *RETRY_OPTIONS,
        ranged("--dlq-ttl"),
        ROUTE_OPTION,
        ranged("--ttl"),
        ranged("--claim-ttl"),
        ranged("--delay"),
        ranged("--max-ttl"),
        ranged("--min-ttl"),
        *TTL_MODEL_AND_ELIGIBILITY_OPTIONS,
        ranged("--max-messages"),
        ranged("--max-bytes"),
        click.option(
            "--overflow",
            type=click.Choice([o.value for o in Overflow]),
            help="What a send past a bound does: drop the oldest (the default), refuse the"
            " send, or refuse it and dead-letter what was refused.",
        ),
        click.option(
            "--redrive-allow",
            metavar="any|none|Q1,Q2",
            help="Which queues may name this one as their DLQ (SQS's redrive-allow policy).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _redelivery_as_claims(values: dict[str, Any]) -> None:
    """--max-redelivery N as the --max-claims it means, N + 1."""
    redelivery = values.pop("max_redelivery", None)
    if redelivery is None:
        return
    if values["max_claims"] not in (None, redelivery + 1):
        raise click.UsageError("--max-redelivery is --max-claims less one: give one of them.")
    values["max_claims"] = redelivery + 1


def _check_policy(dlq: str | None, max_claims: int | None, default_dlq: bool | None) -> None:
    if dlq is not None and max_claims is None:
        raise click.UsageError("--dlq needs --max-claims: the deliveries before the DLQ.")
    if max_claims is not None and dlq is None and not default_dlq:
        raise click.UsageError(
            "--max-claims needs --dlq QUEUE (or --default-dlq): where the messages go."
        )


def _metadata(values: dict[str, Any]) -> dict[str, Any]:
    """The metadata keys of the options given (left-out options are not in it)."""
    out = {}
    for option, value in values.items():
        if option in BY_OPTION and value is not None:
            if option == "redrive_allow":
                value = _redrive_allow(value)
            out[BY_OPTION[option].key] = value
    return out


@queue.command()
@click.argument("name", type=NAMED)
@policy_options
@click.option("--dead-letter-on-expiry", is_flag=True, help="Move expired messages to the DLQ.")
@click.option(
    "--default-dlq",
    is_flag=True,
    help="Without --dlq, dead-letter to the project's default DLQ.",
)
@server_options
def create(client: Client, name: str, **values: Any) -> None:
    """Create queue NAME, optionally with a dead-letter policy; settings left out come from
    the template its name matches.

    A queue that exists already is left as it is: with the same settings that is no error
    (as `aws sqs create-queue`), with others it is one; `queue update` changes them.

    \b
    deadletter queue create orders --dlq orders-dlq --max-redelivery 4
    deadletter queue create orders --retry-min-backoff 10 --retry-max-backoff 600
    """
    _redelivery_as_claims(values)
    retry_policy_of(values, None)
    routes_of(values, None)
    _check_policy(values["dlq"], values["max_claims"], values["default_dlq"])
    values["dead_letter_on_expiry"] = values["dead_letter_on_expiry"] or None
    values["default_dlq"] = values["default_dlq"] or None
    metadata = _metadata(values)
    if client.create_queue(name, metadata):
        echo(f"created {name}")
        _warn_short_dead_letter_life(client, name, values["dlq"], values["dlq_ttl"])
        return
    current = client.get_queue(name)
    differ = [s for s in SETTINGS if s.key in metadata and current.get(s.key) != metadata[s.key]]
    if not differ:
        echo(f"{name} exists already, with these settings")
        return
    said = "; ".join(
        f"{s.label} is {_said(s, current.get(s.key))}, not {_said(s, metadata[s.key])}"
        for s in differ
    )
    raise Failure(
        f"queue {name!r} exists with other settings ({said}); to change them:"
        f" deadletter queue update {name} ..."
    )


@queue.command()
@click.argument("name", type=NAMED)
@policy_options
@click.option(
    "--dead-letter-on-expiry/--no-dead-letter-on-expiry",
    default=None,
    help="Move expired messages to the DLQ, or drop them.",
)
@click.option(
    "--default-dlq/--no-default-dlq",
    default=None,
    help="Without --dlq, dead-letter to the project's default DLQ.",
)
@click.option(
    "--no-dlq",
    is_flag=True,
    help="Remove the dead-letter policy (DLQ, max claims, DLQ TTL, on expiry).",
)
@click.option(
    "--no-retry-policy",
    is_flag=True,
    help="Remove the retry policy: a message given back is visible again at once.",
)
@click.option(
    "--template",
    "template",
    help="Take the settings of this queue template (deadletter template); options given win.",
)
@click.option(
    "--reset",
    "reset",
    multiple=True,
    type=click.Choice([o.replace("_", "-") for o in RESETTABLE]),
    help="Return a setting to its default (repeatable).",
)
@server_options
def update(
    client: Client,
    *,
    name: str,
    no_dlq: bool,
    no_retry_policy: bool,
    template: str | None,
    reset: tuple[str, ...],
    **values: Any,
) -> None:
    """Change settings of queue NAME; those not given stay as they are.

    \b
    deadletter queue update orders --dlq orders-dlq --max-claims 5
    deadletter queue update orders --no-dlq
    deadletter queue update orders-dlq --redrive-allow orders,payments
    deadletter queue update orders --reset max-ttl --ttl 600
    deadletter queue update orders --template orders
    deadletter queue update orders --retry-max-backoff 60
    deadletter queue update orders --no-retry-policy
    """
    current = client.get_queue(name)
    if template is not None:
        _take_template(client.template(template), values)
    backoffs = (values["retry_min_backoff"], values["retry_max_backoff"])
    if no_retry_policy and backoffs != (None, None):
        raise click.UsageError("--no-retry-policy removes the policy: give no backoff with it.")
    _redelivery_as_claims(values)
    retry_policy_of(values, current.get(declared.RETRY_POLICY.zaqar))
    routes_of(values, current.get(declared.DLQ_ROUTES.zaqar))
    if values.get("dead_letter_routes") == {}:
        values["dead_letter_routes"], reset = None, (*reset, "dead-letter-routes")
    given = {k for k, v in values.items() if v is not None}
    if no_dlq and given & set(POLICY):
        raise click.UsageError("--no-dlq removes the policy: give no other DLQ option with it.")
    if given & {"dlq", "max_claims"}:
        # Either one changes a policy the queue may have already: the other is kept.
        if values["dlq"] is None and not values["default_dlq"]:
            values["dlq"] = current.get("_dead_letter_queue")
        if values["max_claims"] is None:
            values["max_claims"] = current.get("_max_claim_count")
        _check_policy(values["dlq"], values["max_claims"], values["default_dlq"])
    operations = [
        {"op": "add", "path": f"/metadata/{key}", "value": value}
        for key, value in _metadata(values).items()
    ]
    removed = [BY_OPTION[o].key for o in POLICY] if no_dlq else []
    removed += [BY_OPTION[o.replace("-", "_")].key for o in reset]
    removed += [BY_OPTION["retry_policy"].key] if no_retry_policy else []
    # Only keys that are there are removed: Zaqar refuses to remove a missing one.
    operations += [
        {"op": "remove", "path": f"/metadata/{key}"}
        for key in removed
        if current.get(key) not in (None, False, {})
    ]
    if not operations:
        echo(f"{name}: nothing to change")
        return
    client.update_queue(name, operations)
    echo(f"updated {name}")
    if given & set(POLICY):
        dlq_ttl = None if no_dlq else values["dlq_ttl"] or current.get(BY_OPTION["dlq_ttl"].key)
        dlq = None if no_dlq else values["dlq"] or current.get(BY_OPTION["dlq"].key)
        _warn_short_dead_letter_life(client, name, dlq, dlq_ttl)


def _warn_short_dead_letter_life(
    client: Client, name: str, dlq: str | None, dlq_ttl: int | None
) -> None:
    """Say so when NAME's dead letters would leave their DLQ within the hour: a DLQ TTL that
    short, or a DLQ whose maximum TTL is (the server keeps dead letters that long without a
    DLQ TTL; docs/api.md, "How long dead letters stay")."""
    if dlq is None:
        return
    if dlq_ttl is not None:
        life, why = int(dlq_ttl), "--dlq-ttl"
    else:
        limit = client.get_queue(dlq).get(BY_OPTION["max_ttl"].key)
        if limit is None:
            return
        life, why = int(limit), f"the maximum TTL of {dlq}"
    if life < SHORT_DEAD_LETTER_LIFE:
        echo(
            f"warning: dead letters of {name} stay at most {life} s in {dlq} ({why});"
            " each one that expires is counted and logged",
            err=True,
        )


def _take_template(doc: dict[str, Any], values: dict[str, Any]) -> None:
    """The template's settings as the options that were not given; a template with max claims
    and no DLQ dead-letters to the project's default DLQ."""
    for option, key in TEMPLATE_KEYS.items():
        if doc.get(key) is not None and values.get(option) is None:
            values[option] = doc[key]
    if doc.get("max_claims") is not None and doc.get("dlq") is None and values["dlq"] is None:
        values["default_dlq"] = True


def _said(setting: Setting, value: Any) -> str:
    """A setting's value in words."""
    if setting.key == "_overflow" and value is None:
        value = Overflow.DROP_HEAD.value  # left out when it is the default
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return _said_object(setting.key, value)
    if setting.key == "_overflow" and value in OVERFLOW_SAID:
        return f"{OVERFLOW_SAID[Overflow(value)]} ({value})"
    if setting.unit:
        return f"{value} {setting.unit}"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _said_object(key: str, value: dict[str, Any]) -> str:
    """A setting held as a JSON object, in words."""
    if key == "_redrive_allow":
        permission = value.get("permission")
        if permission == "allowAll":
            return "any queue"
        if permission == "denyAll":
            return "no queue"
        return ", ".join(value.get("sources") or []) or "no queue"
    if key == "_dead_letter_routes":
        return ", ".join(f"{reason} -> {queue}" for reason, queue in sorted(value.items()))
    if key == "_retry_policy":
        low, high = value.get("minimum_backoff"), value.get("maximum_backoff")
        return f"{low} s, doubling up to {high} s"
    return json.dumps(value, ensure_ascii=False)


# A source whose DLQ was deleted: its policy is inactive, so its poison messages are
# delivered again without limit until the DLQ is back (created again, or another named).
MISSING_SHORT = "(missing)"
MISSING_LONG = (
    "(MISSING: deleted; the policy is inactive and poison messages are delivered again"
    " without limit until it is created again)"
)


def _missing_dlq(metadata: dict[str, Any], missing: str) -> str | None:
    """The queue's DLQ flagged as gone, as `queue list` and `queue show` say it; None while
    it is there (or none is named)."""
    dlq = metadata.get("_dead_letter_queue")
    if dlq is not None and metadata.get("_dead_letter_policy_active") is False:
        return f"{dlq} {missing}"
    return None


@queue.command(name="list")
@json_option
@server_options
def list_(client: Client, as_json: bool) -> None:
    """List queues with their dead-letter queue."""
    queues = client.list_queues()
    if as_json:
        print_json(queues)
        return
    print_table(
        None,
        ["queue", "dead-letter queue", "max claims"],
        (
            (
                q["name"],
                _missing_dlq(q.get("metadata") or {}, MISSING_SHORT)
                or (q.get("metadata") or {}).get("_dead_letter_queue"),
                (q.get("metadata") or {}).get("_max_claim_count"),
            )
            for q in queues
        ),
        empty="no queues yet; make one: deadletter queue create NAME",
    )


@queue.command()
@click.argument("name", type=NAMED)
@json_option
@server_options
def show(client: Client, name: str, as_json: bool) -> None:
    """Show a queue's settings and counts, dead-lettered by reason, and a DLQ's sources."""
    settings = client.get_queue(name)
    stats = client.stats(name)
    if as_json:
        print_json({"name": name, "metadata": settings, "stats": stats})
        return
    known = {s.key for s in (*SETTINGS, *SHOWN)} | {"_enable_encrypt_messages"}
    rows = [(s.label, _said(s, settings.get(s.key))) for s in (*SETTINGS, *SHOWN)]
    gone = _missing_dlq(settings, MISSING_LONG)
    if gone is not None:
        at = next(i for i, s in enumerate(SETTINGS) if s.key == "_dead_letter_queue")
        rows[at] = (rows[at][0], gone)
    rows += [
        (f"metadata {key}", _said(Setting("", key, key), value))
        for key, value in sorted(settings.items())
        if key not in known
    ]
    print_table(f"{name}: settings", ["setting", "value"], rows, flexible=("value",))
    counts = stats["messages"]
    dead = stats.get("dead_letter", {})
    rows = [(k, counts.get(k)) for k in ("free", "claimed", "delayed", "total")]
    rows += [
        (f"dead-lettered ({reason})", n) for reason, n in dead.get("dead_lettered", {}).items()
    ]
    rows += [
        ("acknowledged", dead.get("acknowledged")),
        ("expired and dropped", dead.get("expired_dropped")),
    ]
    if dead.get("by_source") or dead.get("dead_letters_expired"):
        rows += [("of them dead letters", dead.get("dead_letters_expired", 0))]
    rows += [(f"dropped ({reason})", n) for reason, n in dead.get("dropped", {}).items()]
    rows += [(f"kept, DLQ full ({reason})", n) for reason, n in dead.get("dlq_full", {}).items()]
    rows += [(f"from {source}", n) for source, n in dead.get("by_source", {}).items()]
    print_table(f"{name}: messages", ["messages", "count"], rows)
    expiry = oldest_expiry(stats, "dead letter" if dead.get("by_source") else "message")
    if expiry:
        echo(expiry)


@queue.command()
@click.argument("name", type=NAMED)
@click.option(
    "--force",
    is_flag=True,
    help="Delete it even if it is the DLQ of other queues: their dead-letter policies turn"
    " inactive, and their poison messages are delivered again without limit.",
)
@server_options
def delete(client: Client, name: str, force: bool) -> None:
    """Delete queue NAME and its messages (a DLQ other queues use only with --force)."""
    client.get_queue(name)  # Zaqar deletes a missing queue without a word: a typo must show
    client.delete_queue(name, force=force)
    echo(f"deleted {name}")
