"""The `deadletter` command: one click group; each task's commands live in their own module
under `deadletter.cli` and are registered below with one `main.add_command` line."""

from __future__ import annotations

from typing import Any

import click

from deadletter.cli.analyze import analyze
from deadletter.cli.credentials import credentials
from deadletter.cli.dlq import dlq
from deadletter.cli.messages import ack, claim, nack, peek, reject, send
from deadletter.cli.output import Failure
from deadletter.cli.queues import queue
from deadletter.cli.redrive import redrive
from deadletter.cli.server_options import server_options
from deadletter.cli.tags import tag
from deadletter.cli.templates import template


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="deadletter")
@click.option(
    "--key-id",
    envvar="DEADLETTER_KEY_ID",
    show_envvar=True,
    default=None,
    help="Credential key id for client commands [then `key_id` in the config file].",
)
@click.option(
    "--secret",
    envvar="DEADLETTER_SECRET",
    show_envvar=True,
    default=None,
    help="Credential secret [then `secret` in the config file; prefer either to this flag].",
)
def main(key_id: str | None, secret: str | None) -> None:
    """deadletter: a message-queue server built around the dead-letter queue."""


@main.command()
@server_options()
def serve(**settings: Any) -> None:
    """Serve the Zaqar v2 and SQS APIs on one port until SIGTERM or SIGINT."""
    from deadletter.auth.errors import MasterKeyError
    from deadletter.config import ConfigError, ServerConfig
    from deadletter.server import run

    if (settings["ssl_certfile"] is None) != (settings["ssl_keyfile"] is None):
        raise click.UsageError("--ssl-certfile and --ssl-keyfile go together.")
    config = ServerConfig(**settings)
    try:
        config.check_workers()
        config.webhook_networks  # noqa: B018 (refuses a malformed CIDR before starting)
        config.auth_required  # noqa: B018 (refuses auth off on an open host before starting)
        run(config)
    except (ConfigError, MasterKeyError) as exc:
        raise Failure(str(exc)) from None


for command in (queue, send, peek, claim, ack, nack, reject, dlq, redrive, analyze, credentials):
    main.add_command(command)
main.add_command(template)
main.add_command(tag)
