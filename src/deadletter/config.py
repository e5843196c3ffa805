"""The server's configuration: one value per `deadletter serve` flag and DEADLETTER_* variable."""

from __future__ import annotations

import ipaddress
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from deadletter.domain.limits import BODY_BYTES
from deadletter.domain.model import DEFAULT_QUEUE_QUOTA

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# Where `serve --workers` leaves its configuration for the worker processes it starts.
CONFIG_ENV = "DEADLETTER_SERVE_CONFIG"


class ConfigError(Exception):
    """The flags contradict each other or the server's safety rules."""


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8888
    db: str | None = None
    data_dir: Path = Path("data")
    sweep_interval: float = 1.0
    log_level: str = "info"
    # auto: text on a terminal, JSON otherwise (docs/cli.md, "Serving").
    log_format: str = "auto"
    # One line per request, off unless asked for (secret query parameters redacted).
    access_log: bool = False
    test_mode: bool = False
    # The largest request body either face reads (docs/limits.md).
    max_body_bytes: int = BODY_BYTES
    # The most queues one project may hold; 0: no limit (docs/limits.md).
    max_queues: int = DEFAULT_QUEUE_QUOTA
    auth: str | None = None  # "required" or "off"; None: off on loopback, else required
    insecure_no_auth: bool = False
    master_key_file: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    workers: int = 1
    # Zaqar's `require_confirmation`: webhooks are notified only once they confirm.
    subscription_confirmation: bool = False
    # The SQS home region: its queues are the projects' own, another region's are apart.
    region: str = "us-east-1"
    # Networks webhooks may reach although they are not public (`--webhook-allow`, CIDRs).
    webhook_allow: tuple[str, ...] = ()
    # The longest lifetime of a Zaqar signed URL, in seconds (docs/security.md).
    signed_url_max_lifetime: int = 7 * 24 * 3600
    # Per project, how many queue names /metrics labels (docs/security.md#metrics).
    metrics_queues: int = 100

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
            raise ConfigError(
                f"--db {redacted(url)}: the directory {database.parent} does not exist;"
                " create it first."
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
