"""`deadletter queue ...`: create, list, show and delete queues."""

from __future__ import annotations

from typing import Any

import click

from deadletter.cli.output import json_option, print_json, print_table, server_options
from deadletter.client import Client
from deadletter.domain.model import MAX_CLAIM_COUNT, MAX_DELAY, MIN_DLQ_MESSAGE_TTL


@click.group()
def queue() -> None:
    """Create, list, show and delete queues."""


@queue.command()
@click.argument("name")
@click.option("--dlq", help="The dead-letter queue (it must exist).")
@click.option(
    "--max-claims",
    type=click.IntRange(1, MAX_CLAIM_COUNT),
    help="Deliveries before a message moves to the DLQ.",
)
@click.option(
    "--dlq-ttl",
    type=click.IntRange(min=MIN_DLQ_MESSAGE_TTL),
    help="TTL of messages once in the DLQ (s).",
)
@click.option("--dead-letter-on-expiry", is_flag=True, help="Move expired messages to the DLQ.")
@click.option("--ttl", type=click.IntRange(min=1), help="Default message TTL (s).")
@click.option("--claim-ttl", type=click.IntRange(min=0), help="Default claim TTL (s).")
@click.option("--delay", type=click.IntRange(0, MAX_DELAY), help="Default delivery delay (s).")
@click.option(
    "--default-dlq",
    is_flag=True,
    help="Without --dlq, dead-letter to the project's default DLQ.",
)
@click.option("--max-ttl", type=click.IntRange(min=1), help="Maximum message TTL (s).")
@click.option("--min-ttl", type=click.IntRange(min=1), help="Minimum message TTL (s).")
@click.option(
    "--respect-ttl/--no-respect-ttl",
    default=None,
    help="Expire messages by their TTL capped at --max-ttl, or never.",
)
@server_options
def create(
    client: Client,
    name: str,
    dlq: str | None,
    max_claims: int | None,
    dlq_ttl: int | None,
    dead_letter_on_expiry: bool,
    ttl: int | None,
    claim_ttl: int | None,
    delay: int | None,
    default_dlq: bool,
    max_ttl: int | None,
    min_ttl: int | None,
    respect_ttl: bool | None,
) -> None:
    """Create queue NAME, optionally with a dead-letter policy; settings left out come from
    the template its name matches."""
    if (max_claims is None and dlq is not None) or (
        max_claims is not None and not (dlq or default_dlq)
    ):
        raise click.UsageError("--max-claims goes with --dlq or --default-dlq.")
    metadata: dict[str, Any] = {
        "_dead_letter_queue": dlq,
        "_max_claim_count": max_claims,
        "_dead_letter_queue_messages_ttl": dlq_ttl,
        "_dead_letter_on_expiry": dead_letter_on_expiry or None,
        "_default_message_ttl": ttl,
        "_default_claim_ttl": claim_ttl,
        "_default_message_delay": delay,
        "_dead_letter_default": default_dlq or None,
        "_max_message_ttl": max_ttl,
        "_min_message_ttl": min_ttl,
        "_respect_ttl": respect_ttl,
    }
    client.create_queue(name, {k: v for k, v in metadata.items() if v is not None})
    click.echo(f"created {name}")


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
                (q.get("metadata") or {}).get("_dead_letter_queue"),
                (q.get("metadata") or {}).get("_max_claim_count"),
            )
            for q in queues
        ),
    )


@queue.command()
@click.argument("name")
@json_option
@server_options
def show(client: Client, name: str, as_json: bool) -> None:
    """Show a queue's settings and counts, dead-lettered by reason, and a DLQ's sources."""
    settings = client.get_queue(name)
    stats = client.stats(name)
    if as_json:
        print_json({"name": name, "metadata": settings, "stats": stats})
        return
    print_table(f"{name}: settings", ["setting", "value"], sorted(settings.items()))
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
    rows += [(f"from {source}", n) for source, n in dead.get("by_source", {}).items()]
    if dead.get("policy_active") is not None:
        rows.append(("dead-letter policy active", dead["policy_active"]))
    print_table(f"{name}: messages", ["count", "value"], rows)


@queue.command()
@click.argument("name")
@server_options
def delete(client: Client, name: str) -> None:
    """Delete queue NAME and its messages."""
    client.delete_queue(name)
    click.echo(f"deleted {name}")
