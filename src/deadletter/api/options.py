"""The server's options as the faces see them, apart from `app` so that faces need not import it."""

from __future__ import annotations

from dataclasses import dataclass

from deadletter.engine.credentials import Authority


@dataclass(frozen=True)
class AppOptions:
    test_mode: bool = False
    default_project: str = "123456789012"
    region: str = "us-east-1"
    # Authentication is required when set (docs/security.md); off when None.
    authority: Authority | None = None
