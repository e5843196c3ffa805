"""The server's configuration: one value per `deadletter serve` flag and DEADLETTER_* variable.

Each setting is declared once, as a field of `ServerConfig` that carries its default and its
`Option` (help, bounds, environment variable); `serve`'s click options and `--help` are built
from these (cli/server_options.py), so a new setting is one field here and the code that reads
it.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from dataclasses import Field, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from deadletter.auth import signed_urls
from deadletter.domain import names
from deadletter.domain.limits import BODY_BYTES
from deadletter.domain.model import DEFAULT_QUEUE_QUOTA
from deadletter.logs import FORMATS

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# Where a server started with its defaults listens (the client's default URL too).
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8888
# Where `serve --workers` leaves its configuration for the worker processes it starts.
CONFIG_ENV = "DEADLETTER_SERVE_CONFIG"
ENV_PREFIX = "DEADLETTER_"
LOG_LEVELS = ("debug", "info", "warning", "error")


class ConfigError(Exception):
    """The flags contradict each other or the server's safety rules."""


@dataclass(frozen=True, kw_only=True)
class Option:
    """How `deadletter serve` takes one setting: as `--name-with-dashes`, and from the
    environment variable DEADLETTER_NAME unless `env` is False (a flag that gives up a
    guarantee is typed each time, never inherited from an environment)."""

    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    # A boolean that the command line spells as two words, the first meaning true.
    words: tuple[str, str] | None = None
    # A boolean spelled `--x/--no-x` rather than a flag that only turns it on.
    switch: bool = False
    env: bool = True
    directory: bool = False  # a path that names a folder, not a file
    metavar: str | None = None
    # What is wrong with a value of the right type, or None (the region's form).
    check: Callable[[Any], str | None] | None = None
    # The default as `--help` states it, where the field's own (None) means "decided later".
    shown_default: str | None = None


def setting(default: Any, help: str, **how: Any) -> Any:
    """A ServerConfig field: its default, and its option (see `Option`)."""
    return field(default=default, metadata={"option": Option(help=help, **how)})


def flag_of(name: str) -> str:
    return "--" + name.replace("_", "-")


def env_of(name: str) -> str:
    return ENV_PREFIX + name.upper()


def _region_refused(value: str) -> str | None:
    if names.REGION.valid(value):
        return None
    return f"{value!r} is not an AWS region's name (such as us-east-1)."


@dataclass(frozen=True)
class ServerConfig:
    host: str = setting(
        DEFAULT_HOST,
        "The address to listen on; on any but a loopback host authentication is required"
        " (docs/security.md).",
    )
    port: int = setting(DEFAULT_PORT, "The port to listen on.", low=0, high=65535)
    db: str | None = setting(
        None,
        "Database URL: sqlite:///path/file.db or postgresql://...",
        shown_default="sqlite:///<data-dir>/deadletter.db",
    )
    data_dir: Path = setting(Path("data"), "Folder of the default SQLite database.", directory=True)
    sweep_interval: float = setting(
        1.0,
        "Seconds between sweeps for expired messages and looks for due automatic redrives.",
        low=0.01,
    )
    log_level: str = setting("info", "The least severe log lines written.", choices=LOG_LEVELS)
    # auto: text on a terminal, JSON otherwise (docs/cli.md, "Serving").
    log_format: str = setting(
        "auto",
        "auto: lines for people on a terminal, JSON objects (one a line) otherwise.",
        choices=FORMATS,
    )
    # One line per request, off unless asked for (secret query parameters redacted).
    access_log: bool = setting(
        False,
        "Log one line per request (query parameters that carry signatures or credentials"
        " redacted).",
        switch=True,
    )
    test_mode: bool = setting(
        False,
        "Enable test-only endpoints (POST /moto-api/reset wipes every queue): only on a"
        " loopback host with authentication off.",
    )
    # The largest request body either face reads (docs/limits.md).
    max_body_bytes: int = setting(
        BODY_BYTES,
        "Largest request body read; larger ones are refused with 413 (docs/limits.md).",
        low=1024,
    )
    # The most queues one project may hold; 0: no limit (docs/limits.md).
    max_queues: int = setting(
        DEFAULT_QUEUE_QUOTA,
        "Most queues one project may hold (0: no limit); a create beyond is refused with"
        " 403 / OverLimit (docs/limits.md).",
        low=0,
    )
    # "required" or "off"; None: off on loopback, else required.
    auth: str | None = setting(
        None,
        "Require credentials.",
        choices=("required", "off"),
        shown_default="off on a loopback host, else required",
    )
    insecure_no_auth: bool = setting(False, "Allow --auth off on a non-loopback host.", env=False)
    master_key_file: Path | None = setting(
        None,
        "Master key file.",
        shown_default="DEADLETTER_MASTER_KEY, else <sqlite database>.key",
    )
    ssl_certfile: Path | None = setting(
        None, "TLS certificate (PEM); goes with --ssl-keyfile.", env=False
    )
    ssl_keyfile: Path | None = setting(
        None, "TLS private key (PEM); goes with --ssl-certfile.", env=False
    )
    workers: int = setting(
        1, "Server processes sharing the port (more than 1 needs a PostgreSQL --db).", low=1
    )
    # Zaqar's `require_confirmation`: webhooks are notified only once they confirm.
    subscription_confirmation: bool = setting(
        False,
        "With required, a new webhook subscription is sent a confirmation request (with a"
        " signed URL when auth is on) and notified only once it confirms (Zaqar's"
        " require_confirmation).",
        words=("required", "off"),
    )
    # The SQS home region: its queues are the projects' own, another region's are apart.
    region: str = setting(
        "us-east-1",
        "The SQS home region: its queues are each project's own; requests signed for another"
        " region see that region's queues, kept apart (docs/sqs.md).",
        check=_region_refused,
    )
    # Networks webhooks may reach although they are not public (`--webhook-allow`, CIDRs).
    webhook_allow: tuple[str, ...] = setting(
        (),
        "A network webhooks may reach although it is not public (loopback, private,"
        " link-local...); repeatable, or space-separated in the variable (docs/security.md).",
        metavar="CIDR",
    )
    # The longest lifetime of a Zaqar signed URL, in seconds (docs/security.md).
    signed_url_max_lifetime: int = setting(
        signed_urls.MAX_TTL,
        "Seconds a Zaqar signed URL may live at most; longer `expires` are refused.",
        low=60,
    )
    # Per project, how many queue names /metrics labels (docs/security.md#metrics).
    metrics_queues: int = setting(
        100,
        "Per project, how many queue names /metrics labels; the rest count as ~other.",
        low=1,
    )

    def check_db(self) -> None:
        """ConfigError for a `--db` no backend takes (`mysql://...`, which would otherwise name
        a SQLite file `mysql:/...`), or a SQLite file in a directory that does not exist: the
        server creates its data directory, never one that `--db` names (a typo would put the
        database somewhere nobody looks)."""
        url = self.database_url
        scheme, sep, _ = url.partition("://")
        if sep and scheme not in DB_SCHEMES:
            raise ConfigError(
                f"--db {redacted(url)}: unknown scheme {scheme!r}; use sqlite:///path/to/file.db"
                " or postgresql://user@host/database."
            )
        database = sqlite_file(url)
        if self.db and database is not None and not database.parent.is_dir():
            # Named as resolved: `sqlite:///tmp/x.db` is `tmp/x.db` under the working
            # directory, which a reader of "tmp does not exist" would not guess.
            relative = (
                ""
                if database.is_absolute()
                else " A path after sqlite:/// is relative to the working directory;"
                " sqlite://// starts an absolute one."
            )
            raise ConfigError(
                f"--db {redacted(url)}: the directory {database.parent.absolute()} does not"
                f" exist; create it first.{relative}"
            )

    def check_workers(self) -> None:
        """ConfigError for several worker processes on SQLite."""
        if self.workers > 1 and not self.database_url.startswith(("postgresql://", "postgres://")):
            raise ConfigError(
                f"--workers {self.workers} needs a PostgreSQL store (--db postgresql://...):"
                " a SQLite file takes one writing process, and one process already shares each"
                " commit among concurrent requests. Use --workers 1 with SQLite."
            )

    @property
    def webhook_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        """ConfigError for a --webhook-allow that is not a CIDR."""
        try:
            return tuple(ipaddress.ip_network(a.strip(), strict=False) for a in self.webhook_allow)
        except ValueError as exc:
            raise ConfigError(f"--webhook-allow takes networks such as 10.0.0.0/8: {exc}") from None

    @property
    def loopback(self) -> bool:
        return self.host in LOOPBACK_HOSTS or self.host.startswith("127.")

    @property
    def auth_required(self) -> bool:
        """Whether requests must authenticate; ConfigError for auth off on a non-loopback
        host without --insecure-no-auth, and for test mode anywhere but on a loopback host
        without authentication."""
        chosen = self.auth or ("off" if self.loopback else "required")
        if chosen not in ("required", "off"):
            raise ConfigError(f"--auth must be required or off, not {chosen!r}.")
        if self.test_mode:
            self._check_test_mode(chosen)
        if chosen == "off" and not self.loopback and not self.insecure_no_auth:
            raise ConfigError(
                f"Refusing to serve {self.host} with authentication off: anyone who reaches"
                " the port owns every queue. Use --auth required (see docs/security.md),"
                " or add --insecure-no-auth if this network is trusted."
            )
        return chosen == "required"

    def _check_test_mode(self, auth: str) -> None:
        # Test mode adds an unauthenticated route that wipes every queue: it is for a test
        # suite on this machine, never for a server anyone else can reach or that holds
        # credentials worth checking.
        if not self.loopback:
            raise ConfigError(
                f"Refusing --test-mode on {self.host}: test mode adds POST /moto-api/reset,"
                " which wipes every queue without a credential. Serve it on 127.0.0.1"
                " (see docs/security.md)."
            )
        if auth == "required":
            raise ConfigError(
                "--test-mode and --auth required exclude each other: test mode is for test"
                " suites on a loopback host without credentials (see docs/security.md)."
            )

    @property
    def key_file(self) -> Path | None:
        """The master key file: the flag's, else the one beside a SQLite database."""
        if self.master_key_file is not None:
            return self.master_key_file
        return sqlite_key_file(self.database_url)

    @property
    def database_url(self) -> str:
        """`--db` if given, else a SQLite file in the data directory."""
        if self.db:
            return self.db
        return f"sqlite:///{self.data_dir / 'deadletter.db'}"

    @property
    def uses_data_dir(self) -> bool:
        return not self.db


def options() -> list[tuple[Field[Any], Option]]:
    """Every setting with its option, in the order of the fields."""
    return [(f, f.metadata["option"]) for f in fields(ServerConfig)]


def markdown_table() -> str:
    """docs/api.md's table of `serve`'s flags, as it must read (checked by
    tests/cli/test_server_options.py)."""
    rows = ["| flag | environment | default | what |", "|---|---|---|---|"]
    for f, how in options():
        env = f"`{env_of(f.name)}`" if how.env else ""
        rows.append(f"| `{flag_of(f.name)}` | {env} | {_shown(f.default, how)} | {how.help} |")
    return "\n".join(rows) + "\n"


def _shown(default: Any, how: Option) -> str:
    if how.shown_default is not None:
        return how.shown_default.replace("<", "\\<")  # not an HTML tag
    if how.words is not None:
        return f"`{how.words[0] if default else how.words[1]}`"
    if isinstance(default, bool):
        return "on" if default else "off"
    if default is None or default == ():
        return "none"
    return f"`{default}`"


DB_SCHEMES = ("sqlite", "postgresql", "postgres")


def redacted(url: str) -> str:
    """A database URL with its password hidden, for messages and logs."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite file database; None for PostgreSQL or memory."""
    if url.startswith(("postgresql://", "postgres://")):
        return None
    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    if not path or path == ":memory:":
        return None
    return Path(path)


def sqlite_key_file(url: str) -> Path | None:
    """`<database>.key` beside a SQLite file database; None for PostgreSQL or memory."""
    database = sqlite_file(url)
    return None if database is None else database.with_name(database.name + ".key")


def config_to_json(config: ServerConfig) -> str:
    return json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()})


def config_from_json(text: str) -> ServerConfig:
    raw: dict[str, Any] = json.loads(text)
    paths = {f.name for f in fields(ServerConfig) if "Path" in str(f.type)}
    for name in paths:
        if raw.get(name) is not None:
            raw[name] = Path(raw[name])
    raw["webhook_allow"] = tuple(raw.get("webhook_allow", ()))
    return ServerConfig(**raw)
