"""The command line loads what a command needs when it runs: `deadletter --help` loads no
command, and the producer's and consumer's commands load no HTTP stack but the client's own
(not even the standard library's `http.client`, which brings `email` along), no settings
table, no table printer when they print none, no server and no Spark. Counted as modules
imported, not as seconds (docs/benchmarks.md, *Command start-up*, has the seconds and the
command that measures them)."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from deadletter import config
from deadletter.cli.main import COMMANDS, main
from deadletter.client import DEFAULT_URL
from tests.cli.test_cli import ok, url  # noqa: F401 (the live-server fixture)

# Never for these commands: an HTTP stack beyond client/wire.py, the server and its
# configuration, the settings table (domain/), a table printer, Spark.
HEAVY = (
    "httpx", "httpcore", "h11", "anyio", "starlette", "uvicorn", "rich", "pyspark", "pyarrow",
    "http.client", "email", "urllib.request",
    "psycopg", "deadletter.config", "deadletter.server", "deadletter.engine",
    "deadletter.storage", "deadletter.api", "deadletter.pipeline", "deadletter.domain.model",
    "deadletter.domain.settings",
)  # fmt: skip
RUN = """
import json, sys
from deadletter.cli.main import main
try:
    main.main(sys.argv[2:], prog_name="deadletter")
except SystemExit:
    pass
heavy = json.loads(sys.argv[1])
found = (m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))
print(json.dumps(sorted(found)))
"""


def imported_by(*words: str, base: str = "http://127.0.0.1:9") -> list[str]:
    """The heavy modules a fresh interpreter holds once `deadletter WORDS` has run."""
    return run_fresh(*words, base=base)[0]


def run_fresh(*words: str, base: str) -> tuple[list[str], str]:
    """The heavy modules, and what the command printed."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps(HEAVY), *words],
        capture_output=True,
        text=True,
        timeout=60,
        env={"DEADLETTER_URL": base, "PATH": "", "PYTHONPATH": ":".join(sys.path)},
    )
    assert done.stdout, done.stderr
    *printed, last = done.stdout.splitlines()
    found: list[str] = json.loads(last)
    return found, "\n".join(printed)


def test_the_top_help_loads_no_command() -> None:
    assert imported_by("--help") == []


@pytest.mark.parametrize(
    "words",
    [
        ("send", "orders", '{"order": 1}'),
        ("claim", "orders", "--limit", "5"),
        ("ack", "orders", "m", "--claim", "c"),
        ("nack", "orders", "m", "--claim", "c"),
    ],
    ids=lambda w: " ".join(w[:1]),
)
def test_the_message_commands_import_nothing_heavy(words: tuple[str, ...]) -> None:
    # Run against an address where no server answers: the whole command runs, to its error.
    # (A TTL or a delay given reads its range from the settings table, and pays for it.)
    assert imported_by(*words) == []


def test_the_top_help_says_of_each_command_what_its_own_help_says() -> None:
    ctx = click.Context(main)
    for name, lazy in COMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is not None, name
        for limit in (45, 70, 1000):
            said = click.Command(name, help=lazy.summary).get_short_help_str(limit)
            assert said == command.get_short_help_str(limit), name


def test_the_clients_default_url_is_where_the_server_listens_by_default() -> None:
    server = f"http://{config.DEFAULT_HOST}:{config.DEFAULT_PORT}"
    assert server == DEFAULT_URL


def test_a_claim_that_prints_its_table_imports_nothing_heavy(url: str) -> None:  # noqa: F811
    # Given a queue with messages, when a fresh process claims two and prints their table
    ok(url, "queue", "create", "orders")
    ok(url, "send", "orders", "a", '{"b": 2}')
    heavy, printed = run_fresh("claim", "orders", "--limit", "2", base=url)
    assert heavy == []
    assert " message " in printed and " claims " in printed and '{"b": 2}' in printed
