"""The options that name the server's database and master key, written once for every
command that opens them: `serve`, and the offline `credentials` commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def store_options(command: F) -> F:
    """`--db`, `--data-dir` and `--master-key-file`, with their environment variables."""
    options = (
        click.option(
            "--db",
            envvar="DEADLETTER_DB",
            show_envvar=True,
            default=None,
            help="Database URL: sqlite:///path/file.db or postgresql://... "
            "[default: sqlite:///<data-dir>/deadletter.db]",
        ),
        click.option(
            "--data-dir",
            envvar="DEADLETTER_DATA_DIR",
            show_envvar=True,
            type=click.Path(file_okay=False, path_type=Path),
            default=Path("data"),
            show_default=True,
            help="Folder of the default SQLite database.",
        ),
        click.option(
            "--master-key-file",
            envvar="DEADLETTER_MASTER_KEY_FILE",
            show_envvar=True,
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="Master key file [default: DEADLETTER_MASTER_KEY, else <sqlite database>.key].",
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command
