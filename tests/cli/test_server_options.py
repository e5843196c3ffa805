"""`deadletter serve` takes each server setting as ServerConfig declares it: one option per
field, its environment variable, and a default that builds the declared configuration."""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from deadletter.cli.main import main
from deadletter.cli.serve import serve
from deadletter.client import DEFAULT_URL
from deadletter.config import ServerConfig, env_of, flag_of, markdown_table, options


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[ServerConfig]:
    """The configurations `serve` would run, none of them run; no DEADLETTER_* inherited."""
    for name in list(os.environ):
        if name.startswith("DEADLETTER_"):
            monkeypatch.delenv(name)
    started: list[ServerConfig] = []
    monkeypatch.setattr("deadletter.server.run", started.append)
    return started


def test_every_setting_declares_its_option() -> None:
    declared = {f.name for f, _ in options()}
    assert declared == {f.name for f in fields(ServerConfig)}
    for f, how in options():
        assert how.help, f"{f.name}: say what it does"


def test_serve_takes_exactly_the_declared_settings() -> None:
    params = {p.name: p for p in serve.params if isinstance(p, click.Option)}
    assert set(params) == {f.name for f in fields(ServerConfig)}
    for f, how in options():
        assert flag_of(f.name) in params[f.name].opts
        assert params[f.name].envvar == (env_of(f.name) if how.env else None)


def test_serve_without_flags_runs_the_declared_defaults(served: list[ServerConfig]) -> None:
    result = CliRunner().invoke(main, ["serve"])
    assert result.exit_code == 0, result.output
    assert served == [ServerConfig()]


@pytest.mark.parametrize(
    ("env", "value", "expected"),
    [
        ("port", "9999", 9999),
        ("subscription_confirmation", "required", True),
        ("access_log", "true", True),
        ("webhook_allow", "10.0.0.0/8 fd00::/8", ("10.0.0.0/8", "fd00::/8")),
        ("data_dir", "elsewhere", Path("elsewhere")),
        ("signed_url_max_lifetime", "60", 60),
    ],
)
def test_each_variable_sets_its_field(
    served: list[ServerConfig], env: str, value: str, expected: object
) -> None:
    result = CliRunner().invoke(main, ["serve"], env={env_of(env): value})
    assert result.exit_code == 0, result.output
    assert getattr(served[0], env) == expected


def test_the_clients_default_url_is_where_a_default_server_listens() -> None:
    assert f"http://{ServerConfig().host}:{ServerConfig().port}" == DEFAULT_URL


def test_the_docs_show_the_flags_as_declared() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    shown = text.split("<!-- serve-flags:begin -->\n", 1)[1].split("<!-- serve-flags:end -->")[0]
    assert shown == markdown_table(), "regenerate docs/api.md's table from config.markdown_table"
