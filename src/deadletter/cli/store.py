"""The options that name the server's database and master key, for every command that opens
them: `serve`, and the offline `credentials` commands. Declared with the server's other
settings (config.py), so both take them alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from deadletter.cli.server_options import server_options

F = TypeVar("F", bound=Callable[..., Any])


def store_options(command: F) -> F:
    """`--db`, `--data-dir` and `--master-key-file`, with their environment variables."""
    return server_options("db", "data_dir", "master_key_file")(command)
