"""`deadletter tag ...`: create, list, show and delete the consumer tags of a queue."""

from __future__ import annotations

from typing import Any

import click

from deadletter.cli.output import json_option, print_json, print_table, server_options
from deadletter.client import Client


@click.group()
def tag() -> None:
    """Consumer tags: named consumer groups on one queue, each receiving every message with
    deliveries and dead letters of its own (claim, ack, nack and reject take --tag)."""


@tag.command()
@click.argument("queue")
@click.argument("name")
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
) -> None:
    """Create tag NAME on QUEUE."""
    if (filter_attribute is None) != (filter_value is None):
        raise click.UsageError("Give --filter-attribute and --filter-value together.")
    when: float | str | None = start
    if start is not None:
        try:
            when = float(start)
        except ValueError:
            when = start
    client.create_tag(queue, name, when, filter_attribute, filter_value)
    click.echo(f"created tag {name} on {queue}")


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
    )


HEADERS = ["tag", "ready", "claimed", "delivered", "dead-lettered", "filter"]


@tag.command(name="list")
@click.argument("queue")
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
@click.argument("queue")
@click.argument("name")
@json_option
@server_options
def show(client: Client, queue: str, name: str, as_json: bool) -> None:
    """Show tag NAME of QUEUE with its counts."""
    doc = client.tag(queue, name)
    if as_json:
        print_json(doc)
        return
    print_table(f"tag {name}", HEADERS, [_row(doc)])


@tag.command()
@click.argument("queue")
@click.argument("name")
@server_options
def delete(client: Client, queue: str, name: str) -> None:
    """Delete tag NAME of QUEUE: its deliveries end, messages only it still needed leave."""
    client.delete_tag(queue, name)
    click.echo(f"deleted tag {name} of {queue}")
