"""A blank filter option is refused before the server is asked: every command that takes the
filter options (found in the CLI itself, `analyze` among them), every option, every blank
value. Refused there, it never reaches the server, which would refuse it too; taken as no
filter, `dlq purge --error-class ""` would empty the whole DLQ."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from deadletter.cli.dlq import FILTER_OPTIONS
from deadletter.cli.main import COMMANDS, main
from tests.support.blank_values import BLANKS

NOWHERE = "http://127.0.0.1:9"  # nothing listens: a command that asked the server would fail so


def commands() -> list[tuple[list[str], click.Command]]:
    """Every command (a group's too) that takes the filter options, with its path."""
    found: list[tuple[list[str], click.Command]] = []

    def walk(path: list[str], command: click.Command) -> None:
        if {p.name for p in command.params} >= {key for _, key, _, _ in FILTER_OPTIONS}:
            found.append((path, command))
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk([*path, name], sub)

    ctx = click.Context(main)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert command is not None
        walk([name], command)
    return found


FILTERED = commands()


def test_every_command_that_selects_dead_letters_takes_the_filter_options() -> None:
    assert {" ".join(path) for path, _ in FILTERED} >= {
        "dlq list", "dlq count", "dlq export", "dlq purge", "redrive start", "analyze"}  # fmt: skip


def argv(path: list[str], command: click.Command, out: Path) -> list[str]:
    """`path` with whatever else the command requires: a DLQ for its arguments, a file for
    its required options, and --queue for analyze."""
    args = [*path]
    for param in command.params:
        if isinstance(param, click.Argument) and param.required:
            args.append("orders-dlq")
        elif isinstance(param, click.Option) and param.required:
            args += [param.opts[0], str(out)]
    return [*args, "--queue", "orders-dlq"] if path == ["analyze"] else args


@pytest.mark.parametrize(("path", "command"), FILTERED, ids=[" ".join(p) for p, _ in FILTERED])
def test_a_blank_filter_option_is_refused_naming_it(
    path: list[str], command: click.Command, tmp_path: Path
) -> None:
    for flag, _, _, extra in FILTER_OPTIONS:
        if "type" in extra:
            continue  # a choice or a number: click refuses a blank one itself
        for value in BLANKS:
            args = [*argv(path, command, tmp_path / "out"), flag, value, "--yes"]
            if "--yes" not in {o for p in command.params for o in getattr(p, "opts", ())}:
                args.pop()
            result = CliRunner().invoke(main, args, env={"DEADLETTER_URL": NOWHERE})
            assert result.exit_code == 2, (args, result.output)
            assert flag in result.output, (args, result.output)
            assert "cannot reach" not in result.output


@pytest.mark.parametrize("flag", [f for f, _, _, extra in FILTER_OPTIONS if "type" in extra])
def test_a_blank_choice_or_number_is_refused_by_click(flag: str) -> None:
    for value in BLANKS:
        args = ["dlq", "purge", "orders-dlq", flag, value, "--yes"]
        result = CliRunner().invoke(main, args, env={"DEADLETTER_URL": NOWHERE})
        assert result.exit_code == 2 and flag in result.output, (value, result.output)
