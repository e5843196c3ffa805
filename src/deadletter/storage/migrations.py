"""Schema versions: numbered SQL files per dialect, applied in order, recorded in the database."""

from __future__ import annotations

from importlib import resources


def migration_scripts(package: str) -> list[tuple[int, str]]:
    """(version, sql) for every `NNNN_name.sql` in the package's `migrations` folder, in order."""
    folder = resources.files(package).joinpath("migrations")
    scripts = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            scripts.append((int(entry.name.split("_", 1)[0]), entry.read_text(encoding="utf-8")))
    return sorted(scripts)
