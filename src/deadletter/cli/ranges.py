"""A setting's range as a click type, read from the setting's declaration (domain/settings.py)
only when a value is checked or a help page shows it: the producer and consumer commands take
a TTL or a delay, and would otherwise import the whole settings table to start."""

from __future__ import annotations

import click


class DeclaredRange(click.IntRange):
    """click.IntRange over the range of the setting named `setting` in domain/settings.py."""

    def __init__(self, setting: str) -> None:
        self.setting = setting
        self._bounds: tuple[int, int] | None = None
        super().__init__()

    def _read(self) -> tuple[int, int]:
        if self._bounds is None:
            from deadletter.domain import settings as declared

            declaration = getattr(declared, self.setting)
            self._bounds = (declaration.low, declaration.high)
        return self._bounds

    @property
    def min(self) -> int:
        return self._read()[0]

    @min.setter
    def min(self, _: object) -> None:
        """The declaration's, always (click.IntRange sets it to what it was given)."""

    @property
    def max(self) -> int:
        return self._read()[1]

    @max.setter
    def max(self, _: object) -> None:
        """As `min`."""
