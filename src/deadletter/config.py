"""The server's configuration: one value per `deadletter serve` flag and DEADLETTER_* variable."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


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
    test_mode: bool = False
    # The largest request body either face reads (docs/limits.md).
    max_body_bytes: int = 4 * 1024 * 1024
    auth: str | None = None  # "required" or "off"; None: off on loopback, else required
    insecure_no_auth: bool = False
    master_key_file: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None

    @property
    def loopback(self) -> bool:
        return self.host in LOOPBACK_HOSTS or self.host.startswith("127.")

    @property
    def auth_required(self) -> bool:
        """Whether requests must authenticate; ConfigError for auth off on a non-loopback
        host without --insecure-no-auth."""
        chosen = self.auth or ("off" if self.loopback else "required")
        if chosen not in ("required", "off"):
            raise ConfigError(f"--auth must be required or off, not {chosen!r}.")
        if chosen == "off" and not self.loopback and not self.insecure_no_auth:
            raise ConfigError(
                f"Refusing to serve {self.host} with authentication off: anyone who reaches"
                " the port owns every queue. Use --auth required (see docs/security.md),"
                " or add --insecure-no-auth if this network is trusted."
            )
        return chosen == "required"

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


def sqlite_key_file(url: str) -> Path | None:
    """`<database>.key` beside a SQLite file database; None for PostgreSQL or memory."""
    if url.startswith(("postgresql://", "postgres://")):
        return None
    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    if not path or path == ":memory:":
        return None
    database = Path(path)
    return database.with_name(database.name + ".key")
