"""The server's configuration: one value per `deadletter serve` flag and DEADLETTER_* variable."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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

    @property
    def database_url(self) -> str:
        """`--db` if given, else a SQLite file in the data directory."""
        if self.db:
            return self.db
        return f"sqlite:///{self.data_dir / 'deadletter.db'}"

    @property
    def uses_data_dir(self) -> bool:
        return not self.db
