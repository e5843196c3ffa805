"""The analysis on a standalone Spark cluster (a master and a worker started here, as a
deployment runs them) finds what local mode finds: same patterns, same assignments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.services import java_available, missing

ROOT = Path(__file__).parents[2]
pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.timeout(600)
def test_a_standalone_cluster_gives_the_same_results_as_local_mode(tmp_path: Path) -> None:
    reason = java_available()
    if reason:
        missing(reason)
    # In its own process: a process holds one SparkContext, and the suite's is local.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "bench", "cluster", "--size", "2000", "--work",
         str(tmp_path / "work"), "--results", str(tmp_path / "results")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=580,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    report = json.loads((tmp_path / "results" / "cluster.json").read_text())
    assert report["same_results"] is True and report["patterns"] > 0
