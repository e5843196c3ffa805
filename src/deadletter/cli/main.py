"""The `deadletter` command: one click group; each task's commands live in their own module
under `deadletter.cli` and are registered below with one `main.add_command` line."""

from __future__ import annotations

from pathlib import Path

import click

from deadletter.cli.analyze import analyze
from deadletter.cli.credentials import credentials
from deadletter.cli.dlq import dlq
from deadletter.cli.messages import ack, claim, nack, peek, reject, send
from deadletter.cli.output import Failure
from deadletter.cli.queues import queue
from deadletter.cli.redrive import redrive
from deadletter.cli.store import store_options
from deadletter.cli.tags import tag
from deadletter.cli.templates import template
from deadletter.domain import names
from deadletter.domain.model import DEFAULT_QUEUE_QUOTA
from deadletter.logs import FORMATS


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


def _region(value: str) -> str:
    """An SQS home region, refused unless it has the form of AWS's region names."""

    if not names.REGION.valid(value):
        raise click.BadParameter(f"{value!r} is not an AWS region's name (such as us-east-1).")
    return value


@main.command()
@click.option(
    "--host", envvar="DEADLETTER_HOST", show_envvar=True, default="127.0.0.1", show_default=True
)
@click.option(
    "--port",
    envvar="DEADLETTER_PORT",
    show_envvar=True,
    type=click.IntRange(0, 65535),
    default=8888,
    show_default=True,
)
@store_options
@click.option(
    "--sweep-interval",
    envvar="DEADLETTER_SWEEP_INTERVAL",
    show_envvar=True,
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="Seconds between sweeps for expired messages.",
)
@click.option(
    "--log-level",
    envvar="DEADLETTER_LOG_LEVEL",
    show_envvar=True,
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="info",
    show_default=True,
)
@click.option(
    "--log-format",
    envvar="DEADLETTER_LOG_FORMAT",
    show_envvar=True,
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="auto: lines for people on a terminal, JSON objects (one a line) otherwise.",
)
@click.option(
    "--access-log/--no-access-log",
    envvar="DEADLETTER_ACCESS_LOG",
    show_envvar=True,
    default=False,
    show_default=True,
    help="Log one line per request (query parameters that carry signatures or credentials"
    " redacted).",
)
@click.option(
    "--test-mode",
    envvar="DEADLETTER_TEST_MODE",
    show_envvar=True,
    is_flag=True,
    default=False,
    help="Enable test-only endpoints (POST /moto-api/reset wipes every queue): only on a"
    " loopback host with authentication off.",
)
@click.option(
    "--auth",
    envvar="DEADLETTER_AUTH",
    show_envvar=True,
    type=click.Choice(["required", "off"]),
    default=None,
    help="Require credentials [default: off on a loopback host, else required].",
)
@click.option(
    "--insecure-no-auth",
    is_flag=True,
    default=False,
    help="Allow --auth off on a non-loopback host.",
)
@click.option(
    "--workers",
    envvar="DEADLETTER_WORKERS",
    show_envvar=True,
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Server processes sharing the port (more than 1 needs a PostgreSQL --db).",
)
@click.option("--ssl-certfile", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--ssl-keyfile", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option(
    "--max-body-bytes",
    envvar="DEADLETTER_MAX_BODY_BYTES",
    show_envvar=True,
    type=click.IntRange(min=1024),
    default=4 * 1024 * 1024,
    show_default=True,
    help="Largest request body read; larger ones are refused with 413 (docs/limits.md).",
)
@click.option(
    "--max-queues",
    envvar="DEADLETTER_MAX_QUEUES",
    show_envvar=True,
    type=click.IntRange(min=0),
    default=DEFAULT_QUEUE_QUOTA,
    show_default=True,
    help="Most queues one project may hold (0: no limit); a create beyond is refused with"
    " 403 / OverLimit (docs/limits.md).",
)
@click.option(
    "--subscription-confirmation",
    envvar="DEADLETTER_SUBSCRIPTION_CONFIRMATION",
    show_envvar=True,
    type=click.Choice(["required", "off"]),
    default="off",
    show_default=True,
    help="With required, a new webhook subscription is sent a confirmation request (with a"
    " signed URL when auth is on) and notified only once it confirms (Zaqar's"
    " require_confirmation).",
)
@click.option(
    "--region",
    envvar="DEADLETTER_REGION",
    show_envvar=True,
    default="us-east-1",
    show_default=True,
    callback=lambda _ctx, _param, value: _region(value),
    help="The SQS home region: its queues are each project's own; requests signed for another"
    " region see that region's queues, kept apart (docs/sqs.md).",
)
@click.option(
    "--webhook-allow",
    envvar="DEADLETTER_WEBHOOK_ALLOW",
    show_envvar=True,
    multiple=True,
    metavar="CIDR",
    help="A network webhooks may reach although it is not public (loopback, private,"
    " link-local...); repeatable, or space-separated in the variable (docs/security.md).",
)
@click.option(
    "--signed-url-max-lifetime",
    envvar="DEADLETTER_SIGNED_URL_MAX_LIFETIME",
    show_envvar=True,
    type=click.IntRange(min=60),
    default=7 * 24 * 3600,
    show_default=True,
    help="Seconds a Zaqar signed URL may live at most; longer `expires` are refused.",
)
@click.option(
    "--metrics-queues",
    envvar="DEADLETTER_METRICS_QUEUES",
    show_envvar=True,
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Per project, how many queue names /metrics labels; the rest count as ~other.",
)
def serve(
    host: str,
    port: int,
    db: str | None,
    data_dir: Path,
    sweep_interval: float,
    log_level: str,
    log_format: str,
    access_log: bool,
    test_mode: bool,
    auth: str | None,
    insecure_no_auth: bool,
    master_key_file: Path | None,
    workers: int,
    ssl_certfile: Path | None,
    ssl_keyfile: Path | None,
    max_body_bytes: int,
    max_queues: int,
    subscription_confirmation: str,
    region: str,
    webhook_allow: tuple[str, ...],
    signed_url_max_lifetime: int,
    metrics_queues: int,
) -> None:
    """Serve the Zaqar v2 and SQS APIs on one port until SIGTERM or SIGINT."""
    from deadletter.auth.errors import MasterKeyError
    from deadletter.config import ConfigError, ServerConfig
    from deadletter.server import run

    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise click.UsageError("--ssl-certfile and --ssl-keyfile go together.")
    config = ServerConfig(
        host=host,
        port=port,
        db=db,
        data_dir=data_dir,
        sweep_interval=sweep_interval,
        log_level=log_level,
        log_format=log_format,
        access_log=access_log,
        test_mode=test_mode,
        auth=auth,
        insecure_no_auth=insecure_no_auth,
        master_key_file=master_key_file,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
        max_body_bytes=max_body_bytes,
        max_queues=max_queues,
        workers=workers,
        subscription_confirmation=subscription_confirmation == "required",
        region=region,
        webhook_allow=webhook_allow,
        signed_url_max_lifetime=signed_url_max_lifetime,
        metrics_queues=metrics_queues,
    )
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
