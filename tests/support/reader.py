"""The shell of a reader who pastes the documentation's examples: the package's commands on the
PATH, the code under test importable, the test server as the default URL, and nothing of the
machine's own configuration (no config file, project or AWS profile of whoever runs the tests)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import deadletter

# What a reader's environment may hold that would change what the examples do.
FOREIGN = ("DEADLETTER_CONFIG", "DEADLETTER_PROJECT", "AWS_PROFILE", "AWS_CONFIG_FILE")


def reader_shell(tmp_path: Path, url: str) -> tuple[Path, dict[str, str]]:
    """A working directory and the environment to run a page's examples in, against `url`."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        # the code under test, wherever pytest imported it from
        "PYTHONPATH": str(Path(deadletter.__file__).parents[1]),
        "DEADLETTER_URL": url,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "COLUMNS": "80",
    }
    for name in FOREIGN:
        env.pop(name, None)
    return work, env
