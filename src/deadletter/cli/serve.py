"""`deadletter serve`: the server in this process. Its options are built from the server's
configuration (cli/server_options.py), so this module is loaded only for this command."""

from __future__ import annotations

from typing import Any

import click

from deadletter.cli.output import Failure
from deadletter.cli.server_options import server_options


@click.command()
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
