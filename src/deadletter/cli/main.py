"""The `deadletter` command: one click group whose commands are loaded when they are run.

Each task's commands live in their own module under `deadletter.cli`, named in COMMANDS with
the line `deadletter --help` shows for them, so that a command imports what it needs and no
more: `send` does not pay for Spark, the server's configuration or a table printer, and
`deadletter --help` loads no command at all (tests/cli/test_cli_startup.py keeps the lines
equal to the commands' own)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import click

from deadletter.terminal import terminal_safe


@dataclass(frozen=True)
class Lazy:
    module: str  # under deadletter.cli
    attribute: str
    summary: str  # the first paragraph of the command's docstring


COMMANDS = {
    "ack": Lazy("messages", "ack", "Acknowledge (delete) a claimed message: it was processed."),
    "analyze": Lazy(
        "analyze", "analyze", "Group dead letters into failure patterns and write a report."
    ),
    "claim": Lazy("messages", "claim", "Claim messages from QUEUE."),
    "credentials": Lazy(
        "credentials",
        "credentials",
        "Issue, list, rotate and revoke credentials (docs/security.md).",
    ),
    # The dlq group with its failure-group commands (archive, discard, saved filters) added.
    "dlq": Lazy("dlq_groups", "dlq", "Browse, filter and export dead-letter queues."),
    "nack": Lazy(
        "messages",
        "nack",
        "Give a claimed message back for another delivery, after an optional delay; with "
        "--no-requeue, for none (RabbitMQ's nack with requeue=false).",
    ),
    "peek": Lazy("messages", "peek", "Show QUEUE's messages without consuming them."),
    "queue": Lazy("queues", "queue", "Create, update, list, show and delete queues."),
    "redrive": Lazy(
        "redrive",
        "redrive",
        "Start, watch and cancel redrive tasks; set a DLQ's automatic redrive.",
    ),
    "reject": Lazy(
        "messages",
        "reject",
        "Dead-letter a claimed message now, with the reason and the error (with --tag, "
        "for that tag only: the queue's other consumers still receive it).",
    ),
    "send": Lazy(
        "messages",
        "send",
        "Send messages to QUEUE; each BODY (and each --body-file's content) is JSON if it"
        " parses, else text.",
    ),
    "serve": Lazy(
        "serve", "serve", "Serve the Zaqar v2 and SQS APIs on one port until SIGTERM or SIGINT."
    ),
    "tag": Lazy(
        "tags",
        "tag",
        "Consumer tags: named consumer groups on one queue, each receiving every message "
        "with deliveries and dead letters of its own (claim, ack, nack and reject take "
        "--tag).",
    ),
    "template": Lazy(
        "templates",
        "template",
        "Queue templates: settings for new queues whose names match a pattern.",
    ),
}


class LazyGroup(click.Group):
    """A group that imports a command's module when the command is looked up, and lists the
    commands from COMMANDS without importing any."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        lazy = COMMANDS.get(cmd_name)
        if lazy is None:
            return None
        module = importlib.import_module(f"deadletter.cli.{lazy.module}")
        command: click.Command = getattr(module, lazy.attribute)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            # A refusal may quote what it was given or what the server said. (`message` is
            # Final in click's type stubs only: click itself never reads it before `show`.)
            exc.message = terminal_safe(exc.message)  # type: ignore[misc]
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        # A stand-in with the command's summary shortens it as click would the command's own.
        rows = [
            (name, click.Command(name, help=COMMANDS[name].summary).get_short_help_str(limit))
            for name in sorted(COMMANDS)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
