"""Where the CLI finds the server: --url, then DEADLETTER_URL, then the config file, then the
default; and what it says when nothing answers there."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from deadletter.cli.config import resolve
from deadletter.cli.main import main
from deadletter.client import DEFAULT_PROJECT, DEFAULT_URL
from tests.api.serve_process import free_port


def write_config(folder: Path, text: str) -> Path:
    path = folder / "deadletter" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_nothing_configured_is_the_default() -> None:
    server = resolve(None, None)
    assert (server.url.value, server.url.origin) == (DEFAULT_URL, "the default")
    assert server.project.value == DEFAULT_PROJECT


def test_flag_beats_environment_beats_file_beats_default(
    no_configuration: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_config(no_configuration, 'url = "http://file:1"\nproject = 42\n')
    assert resolve(None, None).url.value == "http://file:1"
    assert resolve(None, None).url.origin == str(path)
    assert resolve(None, None).project.value == "42"

    monkeypatch.setenv("DEADLETTER_URL", "http://env:2")
    assert resolve(None, None).url.value == "http://env:2"
    assert resolve(None, None).project.value == "42"  # each setting falls through on its own

    server = resolve("http://flag:3", "p")
    assert (server.url.value, server.url.origin) == ("http://flag:3", "--url")
    assert (server.project.value, server.project.origin) == ("p", "--project")


def test_deadletter_config_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "elsewhere.toml"
    path.write_text('url = "http://named:4"\n', encoding="utf-8")
    monkeypatch.setenv("DEADLETTER_CONFIG", str(path))
    assert resolve(None, None).url.value == "http://named:4"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("url = ", "config.toml"),
        ('uri = "http://x"\n', "unknown key(s) uri"),
        ("url = [1]\n", "url must be a string"),
    ],
)
def test_a_broken_config_file_is_named(no_configuration: Path, text: str, words: str) -> None:
    write_config(no_configuration, text)
    result = CliRunner().invoke(main, ["queue", "list"])
    assert result.exit_code == 1
    assert words in result.output


def test_a_missing_deadletter_config_file_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEADLETTER_CONFIG", str(tmp_path / "nope.toml"))
    result = CliRunner().invoke(main, ["queue", "list"])
    assert result.exit_code == 1
    assert "nope.toml" in result.output


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def test_unreachable_names_the_url_where_it_came_from_and_how_to_change_it(
    no_configuration: Path,
) -> None:
    url = dead_url()
    path = write_config(no_configuration, f'url = "{url}"\n')
    result = CliRunner().invoke(main, ["queue", "list"])
    assert result.exit_code == 2
    assert f"cannot reach the server at {url}" in result.output
    assert f"That URL came from {path}" in result.output
    for way in ("--url", "DEADLETTER_URL", "deadletter serve", str(path), "DEADLETTER_CONFIG"):
        assert way in result.output


@pytest.mark.parametrize(
    ("args", "env", "origin"),
    [
        (["--url", "{url}"], {}, "--url"),
        ([], {"DEADLETTER_URL": "{url}"}, "DEADLETTER_URL"),
    ],
)
def test_unreachable_says_which_setting_chose_the_url(
    args: list[str], env: dict[str, str], origin: str
) -> None:
    url = dead_url()
    argv = ["queue", "list", *(a.format(url=url) for a in args)]
    result = CliRunner().invoke(main, argv, env={k: v.format(url=url) for k, v in env.items()})
    assert result.exit_code == 2
    assert f"at {url}" in result.output
    assert f"That URL came from {origin}" in result.output
