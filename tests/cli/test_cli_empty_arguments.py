"""A name or an id left empty on the command line (a script's variable that came out empty) is
refused as empty, before any request: every argument of every command that names a queue, a
message, a claim, a task or anything else."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from deadletter.cli.main import main
from deadletter.cli.output import Named


def _commands(group: click.Group, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from _commands(command, [*path, name])
        else:
            yield [*path, name], command


NAMED_ARGUMENTS = [
    (path, argument.name)
    for path, command in _commands(main, [])
    for argument in command.params
    if isinstance(argument, click.Argument) and isinstance(argument.type, Named)
]


@pytest.mark.parametrize("blank", ["", "  "])
@pytest.mark.parametrize(("path", "name"), NAMED_ARGUMENTS, ids=lambda v: str(v))
def test_every_name_or_id_argument_left_empty_is_refused_before_a_request(
    path: list[str], name: str, blank: str
) -> None:
    ctx = click.Context(main)
    command = main
    for word in path:
        command = command.get_command(ctx, word)  # type: ignore[attr-defined]
    argv = [*path]
    for param in command.params:
        if isinstance(param, click.Argument):
            argv.append(blank if param.name == name else "x")
        elif param.required and isinstance(param, click.Option):
            argv += [param.opts[0], "1"]
    # Nothing listens on port 9: a request made would be refused as unreachable.
    result = CliRunner().invoke(main, argv, env={"DEADLETTER_URL": "http://127.0.0.1:9"})
    assert result.exit_code == 2, result.output
    assert "is empty" in result.output, result.output


def test_every_argument_but_a_message_body_is_a_name() -> None:
    # A body may be anything, the empty text included; every other argument names something.
    others = [
        (path, argument.name)
        for path, command in _commands(main, [])
        for argument in command.params
        if isinstance(argument, click.Argument) and not isinstance(argument.type, Named)
    ]
    assert others == [(["send"], "bodies")]
