"""`deadletter template ...`: create, list, show, update and delete queue templates."""

from __future__ import annotations

from typing import Any

import click

from deadletter.cli.output import (
    NAMED,
    SHORT_DEAD_LETTER_LIFE,
    F,
    echo,
    iso_time,
    json_option,
    print_json,
    print_table,
    server_options,
)
from deadletter.cli.setting_options import (
    RETRY_OPTIONS,
    TTL_MODEL_AND_ELIGIBILITY_OPTIONS,
    ranged,
    retry_policy_of,
)
from deadletter.client import Client

# CLI option name -> template key.
KEYS = {
    "max_claims": "max_claims",
    "dlq": "dlq",
    "dlq_ttl": "dlq_message_ttl",
    "dead_letter_on_expiry": "on_expiry",
    "ttl": "default_ttl",
    "max_ttl": "max_ttl",
    "min_ttl": "min_ttl",
    "respect_ttl": "respect_ttl",
    "eligible": "dead_letter_eligible",
    "retry_policy": "retry_policy",  # from --retry-min-backoff and --retry-max-backoff
}


def setting_options(command: F) -> F:
    """The settings a template can give; an option left out is not set."""
    options = [
        click.option("--pattern", help="Glob over queue names, e.g. 'orders-*'."),
        ranged("--max-claims"),
        click.option("--dlq", help="The DLQ (default: the project's default DLQ)."),
        ranged("--dlq-ttl"),
        click.option(
            "--dead-letter-on-expiry/--no-dead-letter-on-expiry",
            default=None,
            help="Move expired messages to the DLQ.",
        ),
        ranged("--ttl"),
        ranged("--max-ttl"),
        ranged("--min-ttl"),
        *TTL_MODEL_AND_ELIGIBILITY_OPTIONS,
        *RETRY_OPTIONS,
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _settings(values: dict[str, Any]) -> dict[str, Any]:
    return {KEYS[k]: v for k, v in values.items() if k in KEYS and v is not None}


@click.group()
def template() -> None:
    """Queue templates: settings for new queues whose names match a pattern."""


@template.command()
@click.argument("name", type=NAMED)
@setting_options
@server_options
def create(client: Client, name: str, pattern: str | None, **values: Any) -> None:
    """Create (or replace) template NAME."""
    if pattern is None:
        raise click.UsageError("--pattern is required.")
    retry_policy_of(values, None)
    client.put_template(name, {"pattern": pattern, **_settings(values)})
    echo(f"created template {name}")
    _warn_short_dead_letter_life(name, client.template(name))


@template.command()
@click.argument("name", type=NAMED)
@setting_options
@server_options
def update(client: Client, name: str, pattern: str | None, **values: Any) -> None:
    """Change the settings given of template NAME; the others stay."""
    if values["retry_min_backoff"] is not None or values["retry_max_backoff"] is not None:
        retry_policy_of(values, client.template(name).get("retry_policy"))
    changes = _settings(values) | ({"pattern": pattern} if pattern else {})
    if not changes:
        raise click.UsageError("Give at least one setting to change.")
    client.patch_template(name, changes)
    echo(f"updated template {name}")
    _warn_short_dead_letter_life(name, client.template(name))


def _warn_short_dead_letter_life(name: str, doc: dict[str, Any]) -> None:
    """Say so when the queues template NAME makes would keep dead letters less than an hour:
    its DLQ TTL, or its maximum TTL should it make a DLQ (a DLQ keeps dead letters for its
    maximum TTL; docs/api.md, "How long dead letters stay")."""
    for key, what in (
        ("dlq_message_ttl", "its queues' dead letters stay at most {} s in their DLQ"),
        ("max_ttl", "a DLQ it makes keeps dead letters at most {} s"),
    ):
        value = doc.get(key)
        if isinstance(value, int) and value < SHORT_DEAD_LETTER_LIFE:
            echo(f"warning: template {name}: {what.format(value)}", err=True)


@template.command(name="list")
@json_option
@server_options
def list_(client: Client, as_json: bool) -> None:
    """List templates with their pattern and dead-letter settings."""
    found = client.templates()
    if as_json:
        print_json(found)
        return
    print_table(
        None,
        ["template", "pattern", "max claims", "dlq", "max ttl", "respect ttl"],
        (
            (t["name"], t["pattern"], t["max_claims"], t["dlq"], t["max_ttl"], t["respect_ttl"])
            for t in found
        ),
        empty="no templates; make one: deadletter template create NAME --pattern GLOB",
    )


@template.command()
@click.argument("name", type=NAMED)
@json_option
@server_options
def show(client: Client, name: str, as_json: bool) -> None:
    """Show template NAME."""
    doc = client.template(name)
    if as_json:
        print_json(doc)
        return
    rows = ((k, iso_time(v) if k in TIMES else v) for k, v in sorted(doc.items()))
    print_table(f"template {name}", ["setting", "value"], rows)


TIMES = ("created_at", "updated_at")  # epoch seconds on the wire, an instant for people


@template.command()
@click.argument("name", type=NAMED)
@server_options
def delete(client: Client, name: str) -> None:
    """Delete template NAME (queues made from it keep their settings)."""
    client.delete_template(name)
    echo(f"deleted template {name}")
