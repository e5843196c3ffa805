"""The server's options as the faces see them, apart from `app` so that faces need not import it."""

from __future__ import annotations

from dataclasses import dataclass

from deadletter.engine import Authority


@dataclass(frozen=True)
class AppOptions:
    test_mode: bool = False
    default_project: str = "123456789012"
    region: str = "us-east-1"
    # Authentication is required when set (docs/security.md); off when None.
    authority: Authority | None = None
    # Per project, how many queue names /metrics labels before counting the rest together.
    metrics_queues: int = 100

    def __post_init__(self) -> None:
        # Test mode's reset route wipes every queue without a credential (config.py).
        if self.test_mode and self.authority is not None:
            raise ValueError("Test mode and required authentication exclude each other.")
