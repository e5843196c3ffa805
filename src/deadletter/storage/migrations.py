"""Schema versions: numbered SQL files per dialect, applied in order, recorded in the database.

Each dialect numbers its own files (SQLite alone has 0003, PostgreSQL alone 0008), so a gap in
the numbers is fine. What is not: a file numbered below the newest version a database has
applied that it never applied. Applying only what is above the newest would skip it silently,
its change never made, so the runner refuses to start instead (`pending`).
"""

from __future__ import annotations

from collections.abc import Collection
from importlib import resources


class MigrationRefused(RuntimeError):
    """The migrations cannot bring this database's schema up to date."""


def migration_scripts(package: str) -> list[tuple[int, str]]:
    """(version, sql) for every `NNNN_name.sql` in the package's `migrations` folder, in order;
    MigrationRefused for two files of one number."""
    folder = resources.files(package).joinpath("migrations")
    scripts: dict[int, tuple[str, str]] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            if version in scripts:
                raise MigrationRefused(
                    f"{package}: migrations {scripts[version][0]} and {entry.name} share the"
                    f" number {version:04d}; renumber one of them"
                )
            scripts[version] = (entry.name, entry.read_text(encoding="utf-8"))
    return [(version, sql) for version, (_, sql) in sorted(scripts.items())]


def pending(scripts: list[tuple[int, str]], applied: Collection[int]) -> list[tuple[int, str]]:
    """The scripts a database that has applied the versions `applied` still needs, in order;
    MigrationRefused for a script numbered below its newest version that it never applied."""
    newest = max(applied, default=0)
    missed = [version for version, _ in scripts if version < newest and version not in applied]
    if missed:
        listed = ", ".join(f"{version:04d}" for version in missed)
        raise MigrationRefused(
            f"migration {listed} is numbered below the database's schema version {newest:04d}"
            f" and was never applied to it; renumber it above {newest:04d}"
        )
    return [(version, sql) for version, sql in scripts if version > newest]
