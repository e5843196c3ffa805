"""Text from the server reaches a terminal as text: what a terminal would act on (escape
sequences, C1 controls, marks that reorder a line) is shown escaped in every command's
output and in its refusals, and --json still carries the server's exact text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from deadletter.cli.main import main
from deadletter.terminal import NOT_SHOWN, terminal_safe
from tests.cli.test_cli import claim_one, ok, url  # noqa: F401 (the live-server fixture)

pytestmark = pytest.mark.one_store  # what the CLI prints, whichever store answered

# Each kind a terminal acts on: a CSI that clears the screen, an OSC 52 that sets the
# clipboard (ended by BEL), the one-byte C1 CSI, DEL, a carriage return that hides what
# came before it, a right-to-left override, a line separator.
HOSTILE = "a\x1b[2Jb\x1b]52;c;cHduZWQ=\x07c\x9b31md\x7fe\rf\u202eg\u2028h"


def _shown(text: str) -> set[str]:
    """The characters of NOT_SHOWN in `text`, the line break apart (each line is ours)."""
    return {c for c in text if ord(c) in NOT_SHOWN}


def _as_terminal(url: str, *args: str) -> Result:  # noqa: F811
    # color=True: click keeps escape sequences, as it does for a terminal.
    return CliRunner().invoke(main, list(args), env={"DEADLETTER_URL": url}, color=True)


@given(st.text())
def test_terminal_safe_leaves_no_character_a_terminal_acts_on_and_json_reads_it_back(
    text: str,
) -> None:
    shown = terminal_safe(text)
    assert not _shown(shown)
    assert json.loads(terminal_safe(json.dumps(text, ensure_ascii=False))) == text
    if not _shown(text):
        assert shown == text


@pytest.fixture
def hostile(url: str) -> dict[str, str]:  # noqa: F811
    """A dead letter in `src-dlq` whose body, reason and error are HOSTILE, and a message in
    `src` whose body is."""
    ok(url, "queue", "create", "src-dlq")
    ok(url, "queue", "create", "src", "--dlq", "src-dlq", "--max-claims", "3")
    ok(url, "send", "src", HOSTILE)
    claim_id, message_id = claim_one(url, "src")
    reason, error = f"r{HOSTILE}", f"e{HOSTILE}"
    ok(url, "reject", "src", message_id, "--claim", claim_id, "--reason", reason, "--error", error)
    ok(url, "send", "src", HOSTILE)
    return {"url": url, "reason": reason, "error": error}


@pytest.mark.parametrize(
    "command",
    [
        ["dlq", "list", "src-dlq"],
        ["dlq", "list", "src-dlq", "--wide"],
        ["peek", "src-dlq"],
        ["peek", "src"],
        ["claim", "src"],
        ["dlq", "list", "src-dlq", "--json"],
        ["peek", "src-dlq", "--json"],
        ["claim", "src", "--json"],
    ],
    ids=" ".join,
)
def test_server_text_is_shown_escaped(hostile: dict[str, str], command: list[str]) -> None:
    result = _as_terminal(hostile["url"], *command)
    assert result.exit_code == 0, result.output
    assert not _shown(result.output), result.output
    assert "\\u001b" in result.output  # what was there is still told


def test_json_output_carries_the_servers_exact_text(hostile: dict[str, str]) -> None:
    listed = json.loads(_as_terminal(hostile["url"], "dlq", "list", "src-dlq", "--json").output)
    (dead,) = listed["dead_letters"] if isinstance(listed, dict) else listed
    assert dead["body"] == HOSTILE
    assert {hostile["reason"], hostile["error"]} <= set(_strings(dead))


def _strings(value: object) -> list[str]:
    """Every string in a JSON document."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_a_refusal_quoting_the_input_shows_it_escaped(url: str) -> None:  # noqa: F811
    result = _as_terminal(url, "queue", "create", f"bad{HOSTILE}")
    assert result.exit_code != 0
    assert "is not a queue name" in result.output
    assert not _shown(result.output), result.output


def test_any_command_error_quoting_a_file_shows_it_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A config file's unknown key is quoted by click's own error, not a Failure of ours.
    config = tmp_path / "config.toml"
    config.write_text('"x\\u001b]52;c;cHduZWQ=\\u0007" = "1"\n')
    monkeypatch.setenv("DEADLETTER_CONFIG", str(config))
    result = CliRunner().invoke(main, ["queue", "list"], color=True)
    assert result.exit_code == 1
    assert "unknown key(s) x\\u001b]52;c;cHduZWQ=\\u0007" in result.output
    assert not _shown(result.output), result.output
