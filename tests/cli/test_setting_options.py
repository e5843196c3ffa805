"""The options that set a queue's settings, on every command that takes them: one range (the
setting's declared one) and one help text, whichever command a user types."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from deadletter.cli.main import main
from deadletter.cli.setting_options import RANGED
from deadletter.domain import settings as declared

COMMANDS = [
    ("queue", "create"),
    ("queue", "update"),
    ("template", "create"),
    ("template", "update"),
]


def _options(group: str, name: str) -> dict[str, click.Option]:
    ctx = click.Context(main)
    command = main.get_command(ctx, group).get_command(ctx, name)  # type: ignore[union-attr]
    return {
        flag: param
        for param in command.params
        if isinstance(param, click.Option)
        for flag in param.opts
    }


@pytest.mark.parametrize(("group", "name"), COMMANDS)
def test_each_ranged_option_takes_its_settings_declared_range(group: str, name: str) -> None:
    options = _options(group, name)
    shared = [flag for flag in RANGED if flag in options]
    assert "--max-claims" in shared and "--ttl" in shared
    for flag in shared:
        setting, help_text = RANGED[flag]
        kind = options[flag].type
        assert isinstance(kind, click.IntRange), flag
        assert (kind.min, kind.max) == (setting.low, setting.high), f"{group} {name} {flag}"
        assert options[flag].help == help_text


# Options that differ on purpose: a queue's --dlq must exist, a template's may be left to the
# project's default; `queue create` turns these on only (off is their default), the others
# turn them on or off.
DIFFERENT = {"--dlq", "--dead-letter-on-expiry", "--default-dlq"}


def test_an_option_on_several_commands_is_declared_the_same_on_each() -> None:
    seen: dict[str, tuple[str, str | None, str]] = {}
    for group, name in COMMANDS:
        for flag, option in _options(group, name).items():
            if flag in DIFFERENT or not flag.startswith("--") or option.name == "json":
                continue
            said = (str(option.type), option.help, repr(option.default))
            if flag in seen:
                assert seen[flag][1:] == said, f"{flag} differs on {group} {name}"
            else:
                seen[flag] = (f"{group} {name}", *said)


@pytest.mark.parametrize("group", ["queue", "template"])
@pytest.mark.parametrize(
    ("flag", "setting"),
    [("--max-claims", declared.MAX_CLAIMS), ("--ttl", declared.DEFAULT_TTL)],
)
def test_a_value_past_the_declared_range_is_refused_before_any_request(
    group: str, flag: str, setting: declared.Setting
) -> None:
    # No server listens at this address: a refusal before any request is the only way to exit 2.
    pattern = ["--pattern", "x-*"] if group == "template" else []
    for value in (setting.low - 1, setting.high + 1):
        result = CliRunner().invoke(
            main,
            [group, "create", "x", *pattern, flag, str(value), "--url", "http://127.0.0.1:9"],
        )
        assert result.exit_code == 2, result.output
        assert "is not in the range" in result.output


@pytest.mark.parametrize(
    ("command", "flag", "low", "high"),
    [
        ("claim", "--ttl", 0, declared.CLAIM_TTL.high),
        ("nack", "--delay", 0, declared.CLAIM_TTL.high),
        # a message's TTL: at most what any queue's maximum may be
        ("send", "--ttl", 1, declared.MAX_MESSAGE_TTL.high),
        ("send", "--delay", 0, declared.DEFAULT_DELAY.high),
    ],
)
def test_a_messages_own_times_take_the_engines_range(
    command: str, flag: str, low: int, high: int
) -> None:
    option = next(
        p
        for p in main.get_command(click.Context(main), command).params  # type: ignore[union-attr]
        if isinstance(p, click.Option) and flag in p.opts
    )
    assert isinstance(option.type, click.IntRange)
    assert (option.type.min, option.type.max) == (low, high)
