"""Running a bench again in a fresh process with the code of another checkout (`--base`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent.parent


def run_child(src: Path, bench: str, argv: list[str]) -> dict[str, Any]:
    """`python -m bench BENCH --child ARGV` with `src` first on the path; its last line of
    output, a JSON object, is the result."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    out = subprocess.run(
        [sys.executable, "-m", "bench", bench, "--child", *argv],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result
