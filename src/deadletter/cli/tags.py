"""`deadletter tag ...`: create, list, show, update and delete the consumer tags of a queue."""

from __future__ import annotations

from typing import Any

import click

from deadletter.cli.output import NAMED, echo, json_option, print_json, print_table, server_options
from deadletter.cli.setting_options import RETRY_OPTIONS, ranged, retry_policy_of
from deadletter.client import Client

# A tag's own policy fields, as `--inherit` names them, and their keys on the API.
POLICY_FIELDS = {
    "max-claims": "max_claims",
    "dead-letter-queue": "dead_letter_queue",
    "retry-policy": "retry_policy",
}


@click.group()
def tag() -> None:
    """Consumer tags: named consumer groups on one queue, each receiving every message with
    deliveries and dead letters of its own (claim, ack, nack and reject take --tag)."""


def policy_options(command: Any) -> Any:
    """The options of a tag's own policy, each left out taking the queue's."""
    options = [
        ranged("--max-claims"),
        click.option(
            "--dead-letter-queue",
            help="The tag's own DLQ (it must exist); without it, the queue's routes and DLQ.",
        ),
        *RETRY_OPTIONS,
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _policy(values: dict[str, Any], current: dict[str, Any] | None) -> dict[str, Any]:
    """The API's policy fields of the options given."""
    retry_policy_of(values, current)
    return {key: values[key] for key in POLICY_FIELDS.values() if values.get(key) is not None}


@tag.command()
@click.argument("queue", type=NAMED)
@click.argument("name", type=NAMED)
@policy_options
@click.option(
    "--start",
    help="Receive messages enqueued since then (ISO 8601 or epoch seconds); from now else.",
)
@click.option("--filter-attribute", help="Receive only messages with this attribute...")
@click.option("--filter-value", help="...equal to this value.")
@server_options
def create(
    client: Client,
    *,
    queue: str,
    name: str,
    start: str | None,
    filter_attribute: str | None,
    filter_value: str | None,
    **values: Any,
) -> None:
    """Create tag NAME on QUEUE, with a dead-letter policy and retry backoff of its own
    where given (the queue's else).

    \b
    deadletter tag create orders billing --max-claims 3 --dead-letter-queue billing-dlq
    """
    if (filter_attribute is None) != (filter_value is None):
        raise click.UsageError("Give --filter-attribute and --filter-value together.")
    when: float | str | None = start
    if start is not None:
        try:
            when = float(start)
        except ValueError:
            when = start
    client.create_tag(
        queue, name, when, filter_attribute, filter_value, policy=_policy(values, None)
    )
    echo(f"created tag {name} on {queue}")


@tag.command()
@click.argument("queue", type=NAMED)
@click.argument("name", type=NAMED)
@policy_options
@click.option(
    "--inherit",
    multiple=True,
    type=click.Choice(list(POLICY_FIELDS)),
    help="Take this field from the queue again (repeatable).",
)
@server_options
def update(
    client: Client, *, queue: str, name: str, inherit: tuple[str, ...], **values: Any
) -> None:
    """Change the dead-letter policy and retry backoff of tag NAME of QUEUE; what is not
    given stays as it is.

    \b
    deadletter tag update orders billing --max-claims 5
    deadletter tag update orders billing --inherit dead-letter-queue
    """
    current = client.tag(queue, name)
    policy: dict[str, Any] = dict.fromkeys((POLICY_FIELDS[f] for f in inherit), None)
    given = _policy(values, current.get("retry_policy"))
    if set(policy) & set(given):
        raise click.UsageError("--inherit takes a field from the queue: do not give it too.")
    policy.update(given)
    if not policy:
        echo(f"tag {name} of {queue}: nothing to change")
        return
    client.update_tag(queue, name, policy)
    echo(f"updated tag {name} of {queue}")


def _row(t: dict[str, Any]) -> tuple[Any, ...]:
    counts = t["messages"]
    where = t.get("filter") or {}
    shown = f"{where['attribute']}={where['value']}" if where else ""
    return (
        t["name"],
        counts["ready"],
        counts["claimed"],
        counts["delivered"],
        counts["dead_lettered"],
        shown,
        _dead_letter(t),
    )


def _dead_letter(t: dict[str, Any]) -> str:
    """Where the tag's dead letters go, after how many claims; `(own)` marks what is the
    tag's own rather than the queue's."""
    policy = t.get("dead_letter")
    if policy is None:
        return "none"
    dlq = policy["queue"] + (" (own)" if t.get("dead_letter_queue") else "")
    claims = f"{policy['max_claims']}" + (" (own)" if t.get("max_claims") else "")
    inactive = "" if policy["active"] else " (inactive: its DLQ was deleted)"
    return f"{dlq} after {claims} claims{inactive}"


HEADERS = ["tag", "ready", "claimed", "delivered", "dead-lettered", "filter", "dead letters to"]


@tag.command(name="list")
@click.argument("queue", type=NAMED)
@json_option
@server_options
def list_(client: Client, queue: str, as_json: bool) -> None:
    """List QUEUE's tags with their counts."""
    found = client.tags(queue)
    if as_json:
        print_json(found)
        return
    print_table(queue, HEADERS, (_row(t) for t in found), empty=f"{queue} has no consumer tags")


@tag.command()
@click.argument("queue", type=NAMED)
@click.argument("name", type=NAMED)
@json_option
@server_options
def show(client: Client, queue: str, name: str, as_json: bool) -> None:
    """Show tag NAME of QUEUE with its counts."""
    doc = client.tag(queue, name)
    if as_json:
        print_json(doc)
        return
    print_table(f"tag {name}", HEADERS, [_row(doc)])
    retry = doc.get("retry_policy")
    if retry:
        low, high = retry["minimum_backoff"], retry["maximum_backoff"]
        echo(f"retry backoff (own): {low} s, doubling up to {high} s")


@tag.command()
@click.argument("queue", type=NAMED)
@click.argument("name", type=NAMED)
@server_options
def delete(client: Client, queue: str, name: str) -> None:
    """Delete tag NAME of QUEUE: its deliveries end, messages only it still needed leave."""
    client.delete_tag(queue, name)
    echo(f"deleted tag {name} of {queue}")
