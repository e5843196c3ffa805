"""Where the client commands find the server and project: a flag, the environment, a config
file, or the default, in that order."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import click

from deadletter.client import DEFAULT_PROJECT, DEFAULT_URL

CONFIG_ENV = "DEADLETTER_CONFIG"
URL_ENV = "DEADLETTER_URL"
PROJECT_ENV = "DEADLETTER_PROJECT"
KEY_ID_ENV = "DEADLETTER_KEY_ID"
SECRET_ENV = "DEADLETTER_SECRET"
KEYS = ("url", "project", "key_id", "secret")


def config_path() -> str:
    """`$DEADLETTER_CONFIG`, else `$XDG_CONFIG_HOME/deadletter/config.toml` (XDG's default
    being `~/.config`). Paths as strings: pathlib is one more import for every command."""
    if explicit := os.environ.get(CONFIG_ENV):
        return os.path.expanduser(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "deadletter", "config.toml")


def read_config(path: str) -> dict[str, str]:
    """The file's `url` and `project`; a missing file is an empty config, a broken one an error
    that names it (a typo should not silently send commands elsewhere). The TOML reader is
    imported only when there is a file to read."""
    try:
        with open(path, "rb") as fh:
            text = fh.read()
    except FileNotFoundError:
        if os.environ.get(CONFIG_ENV):
            raise click.ClickException(f"config file {path} ({CONFIG_ENV}): no such file") from None
        return {}
    except OSError as exc:
        raise click.ClickException(f"config file {path}: {exc}") from exc
    import tomllib

    try:
        doc: dict[str, Any] = tomllib.loads(text.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise click.ClickException(f"config file {path}: {exc}") from exc
    unknown = sorted(set(doc) - set(KEYS))
    if unknown:
        raise click.ClickException(
            f"config file {path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(KEYS)})"
        )
    out: dict[str, str] = {}
    for key in KEYS:
        value = doc.get(key)
        if value is None:
            continue
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise click.ClickException(f"config file {path}: {key} must be a string")
        out[key] = str(value)
    return out


@dataclass(frozen=True)
class Setting:
    """A value and where it came from, so an error can say how to change it."""

    value: str
    origin: str


@dataclass(frozen=True)
class Server:
    url: Setting
    project: Setting
    key_id: Setting
    secret: Setting

    @property
    def credential(self) -> tuple[str, str] | None:
        """(key id, secret) when both are set; the server then needs them (auth required)."""
        if self.key_id.value and self.secret.value:
            return self.key_id.value, self.secret.value
        return None


def resolve(
    url: str | None, project: str | None, key_id: str | None = None, secret: str | None = None
) -> Server:
    """Flag > environment > config file > default, for each of url, project, key id and
    secret (a credential has no default: without one the server must have auth off)."""
    file: dict[str, str] | None = None

    def pick(flag: str | None, name: str, env: str, default: str) -> Setting:
        nonlocal file
        if flag:
            return Setting(flag, f"--{name}")
        if value := os.environ.get(env):
            return Setting(value, env)
        if file is None:
            file = read_config(config_path())
        if name in file:
            return Setting(file[name], f"{config_path()}")
        return Setting(default, "the default")

    return Server(
        url=pick(url, "url", URL_ENV, DEFAULT_URL),
        project=pick(project, "project", PROJECT_ENV, DEFAULT_PROJECT),
        key_id=pick(key_id, "key_id", KEY_ID_ENV, ""),
        secret=pick(secret, "secret", SECRET_ENV, ""),
    )


def unreachable_hint(url: Setting) -> str:
    """What to do when nothing answers: start a server, or point the CLI at the right one."""
    return (
        f"That URL came from {url.origin}. Is the server running (`deadletter serve`)?\n"
        f"To use another server: --url URL on the command, DEADLETTER_URL=URL in the\n"
        f'environment, or url = "URL" in {config_path()} (or in the file ${CONFIG_ENV} names).'
    )
