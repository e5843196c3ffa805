"""The command line with credentials: the offline first operator, then the admin API through
a running server; and the server's refusal to run without authentication on an open host."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from deadletter.api.app import AppOptions, build_app
from deadletter.auth.credentials import load_master_key
from deadletter.cli.main import main
from deadletter.config import ConfigError, ServerConfig
from deadletter.engine.credentials import Authority
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.support.servers import serving


def _run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def _issued(output: str) -> tuple[str, str]:
    lines = dict(line.split(":", 1) for line in output.splitlines() if ":" in line)
    return lines["key id"].strip(), lines["secret"].strip()


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_the_first_operator_is_refused_for_a_database_in_a_folder_that_does_not_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: bool
) -> None:
    # Given a --db whose folder is mistyped (`serve` refuses it the same way)
    monkeypatch.delenv("DEADLETTER_MASTER_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    typo = Path("deadleter") / "d.db"
    db = f"sqlite:///{typo if relative else tmp_path / typo}"
    # When the first operator is made offline
    made = _run({}, "credentials", "create-operator", "--db", db)
    # I expect a refusal that names the folder, and nothing made anywhere
    assert made.exit_code == 1, made.output
    assert "deadleter does not exist; create it first." in made.output
    assert list(tmp_path.iterdir()) == []


def test_first_operator_offline_then_credentials_through_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("DEADLETTER_MASTER_KEY", "DEADLETTER_KEY_ID", "DEADLETTER_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    db = f"sqlite:///{tmp_path / 'd.db'}"
    made = _run({}, "credentials", "create-operator", "--db", db)
    assert made.exit_code == 0, made.output
    op_key, op_secret = _issued(made.output)
    assert (tmp_path / "d.db.key").stat().st_mode & 0o077 == 0
    store = open_store(db)
    try:
        engine = Engine(store)
        authority = Authority(engine, load_master_key(tmp_path / "d.db.key", environ={}))
        with serving(build_app(engine, AppOptions(authority=authority))) as url:
            base = {"DEADLETTER_URL": url}
            refused = _run(base, "queue", "list")
            assert refused.exit_code == 1 and "Unauthorized" in refused.output
            op = {**base, "DEADLETTER_KEY_ID": op_key, "DEADLETTER_SECRET": op_secret}
            created = _run(op, "credentials", "create", "--project", "alpha", "--role", "admin")
            assert created.exit_code == 0, created.output
            admin_key, admin_secret = _issued(created.output)
            admin = {**base, "DEADLETTER_KEY_ID": admin_key, "DEADLETTER_SECRET": admin_secret}
            assert _run(admin, "queue", "create", "jobs").exit_code == 0
            assert engine.find_queue("alpha", "jobs") is not None
            listed = _run(admin, "credentials", "list", "--json")
            assert admin_key in listed.output and op_key not in listed.output
            rotated = _run(admin, "credentials", "rotate", admin_key)
            assert rotated.exit_code == 0, rotated.output
            new_key, new_secret = _issued(rotated.output)
            assert _run(admin, "queue", "list").exit_code == 1  # the old key is revoked
            fresh = {**base, "DEADLETTER_KEY_ID": new_key, "DEADLETTER_SECRET": new_secret}
            assert "jobs" in _run(fresh, "queue", "list").output
            assert _run(op, "credentials", "revoke", new_key).exit_code == 0
            assert _run(fresh, "queue", "list").exit_code == 1
    finally:
        store.close()


def test_auth_defaults_and_refusals() -> None:
    assert ServerConfig(host="127.0.0.1").auth_required is False
    assert ServerConfig(host="0.0.0.0").auth_required is True
    assert ServerConfig(host="127.0.0.1", auth="required").auth_required is True
    with pytest.raises(ConfigError):
        _ = ServerConfig(host="0.0.0.0", auth="off").auth_required
    assert ServerConfig(host="0.0.0.0", auth="off", insecure_no_auth=True).auth_required is False
    assert ServerConfig(db="postgresql://x/y").key_file is None
    assert ServerConfig(db="sqlite:////tmp/a.db").key_file == Path("/tmp/a.db.key")


def test_serve_refuses_an_open_host_without_auth() -> None:
    result = CliRunner().invoke(main, ["serve", "--host", "0.0.0.0", "--auth", "off"])
    assert result.exit_code == 1 and "Refusing to serve" in result.output
