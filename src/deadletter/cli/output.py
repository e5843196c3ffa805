"""What every client command shares: the server options, errors as messages, and output as a
readable table or, with --json, as JSON for scripts."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from deadletter.client import DEFAULT_PROJECT, DEFAULT_URL, ApiError, Client, Unreachable

F = TypeVar("F", bound=Callable[..., Any])


def server_options(command: F) -> F:
    """Add --url and --project; the command receives `client` instead."""

    @click.option(
        "--url",
        envvar="DEADLETTER_URL",
        show_envvar=True,
        default=DEFAULT_URL,
        show_default=True,
        help="The server's base URL.",
    )
    @click.option(
        "--project",
        envvar="DEADLETTER_PROJECT",
        show_envvar=True,
        default=DEFAULT_PROJECT,
        show_default=True,
        help="The project (tenant); the SQS face calls it the account.",
    )
    @functools.wraps(command)
    def wrapper(*args: Any, url: str, project: str, **kwargs: Any) -> Any:
        with Client(url, project) as client:
            try:
                return command(*args, client=client, **kwargs)
            except ApiError as exc:
                click.echo(f"error: {exc.title}: {exc.description}", err=True)
                sys.exit(1)
            except Unreachable as exc:
                click.echo(f"error: {exc}", err=True)
                sys.exit(2)

    return wrapper  # type: ignore[return-value]


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    Console().print(table)


def brief(value: Any, width: int = 60) -> str:
    """A body or text cut to fit a table cell."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"
