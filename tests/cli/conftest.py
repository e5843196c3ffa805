"""Every CLI test starts from no configuration: no reader's config file, no DEADLETTER_* names."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def no_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The XDG config folder of the test; the config file would be deadletter/config.toml."""
    for name in ("DEADLETTER_CONFIG", "DEADLETTER_URL", "DEADLETTER_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "xdg-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return config
