"""Test mode is for test suites: loopback only, never with authentication, and its reset route
exists nowhere else."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from deadletter.api.app import AppOptions, build_app
from deadletter.cli.main import main
from deadletter.config import ConfigError, ServerConfig
from deadletter.engine.engine import Engine


@pytest.mark.parametrize(
    ("host", "auth", "insecure", "words"),
    [
        ("127.0.0.1", "required", False, "exclude each other"),
        ("::1", "required", False, "exclude each other"),
        ("0.0.0.0", None, False, "Refusing --test-mode on 0.0.0.0"),
        ("0.0.0.0", "off", True, "Refusing --test-mode on 0.0.0.0"),
        ("10.1.2.3", "required", False, "Refusing --test-mode on 10.1.2.3"),
    ],
)
def test_test_mode_refuses_auth_and_open_hosts(
    host: str, auth: str | None, insecure: bool, words: str
) -> None:
    config = ServerConfig(host=host, auth=auth, insecure_no_auth=insecure, test_mode=True)
    with pytest.raises(ConfigError, match=words):
        config.auth_required  # noqa: B018
    # Without test mode the same flags are fine (or refused for their own reason only).
    if auth == "required":
        assert ServerConfig(host=host, auth=auth).auth_required


def test_test_mode_on_loopback_without_auth_starts() -> None:
    assert ServerConfig(test_mode=True).auth_required is False
    assert ServerConfig(test_mode=True, auth="off", host="localhost").auth_required is False


def test_serve_says_why_it_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[ServerConfig] = []
    monkeypatch.setattr("deadletter.server.run", served.append)  # never a real server here
    result = CliRunner().invoke(main, ["serve", "--test-mode", "--auth", "required"])
    assert served == []
    assert result.exit_code != 0
    assert "--test-mode and --auth required exclude each other" in result.output


def test_the_reset_route_exists_only_in_test_mode(engine: Engine) -> None:
    def paths(options: AppOptions) -> set[str]:
        return {getattr(r, "path", "") for r in build_app(engine, options).routes}

    assert "/moto-api/reset" in paths(AppOptions(test_mode=True))
    assert "/moto-api/reset" not in paths(AppOptions())
