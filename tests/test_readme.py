"""The README's tour, run as a reader runs it: its ```sh blocks pasted into bash in order,
against a fresh server, with `deadletter` and `aws` on the path."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from deadletter.client import Client
from tests.api.serve_process import start, stop
from tests.services import java_available, missing
from tests.support.reader import reader_shell

README = Path(__file__).parents[1] / "README.md"
TOUR = "## A tour"
NEEDS_SPARK = "<!-- tour: needs Spark -->"
BLOCK = re.compile(r"^(?P<mark><!-- [^\n]*-->\n)?```sh\n(?P<code>.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Block:
    line: int  # in README.md, for the failure message
    code: str
    needs_spark: bool


def tour_blocks(text: str) -> list[Block]:
    """The ```sh blocks between the tour's heading and the next heading of its level."""
    start_at = text.index(f"\n{TOUR}\n") + 1
    end = text.find("\n## ", start_at + len(TOUR))
    section = text[start_at : end if end != -1 else len(text)]
    first_line = text[:start_at].count("\n") + 1
    return [
        Block(
            line=first_line + section[: m.start("code")].count("\n"),
            code=m.group("code"),
            needs_spark=(m.group("mark") or "").strip() == NEEDS_SPARK,
        )
        for m in BLOCK.finditer(section)
    ]


def test_the_tour_blocks_are_found_and_the_spark_ones_marked() -> None:
    blocks = tour_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 6
    spark = [b for b in blocks if b.needs_spark]
    assert any("deadletter analyze" in b.code for b in spark)
    assert any("--pattern" in b.code for b in spark)
    assert not any(
        "deadletter analyze" in b.code or "--pattern" in b.code for b in blocks if b not in spark
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_tour_runs_as_written(tmp_path: Path) -> None:
    # Given a fresh server and a shell like the reader's after `source .venv/bin/activate`
    blocks = tour_blocks(README.read_text(encoding="utf-8"))
    no_spark = java_available()
    script = "set -euo pipefail\n" + "".join(
        f"echo '--- README.md line {b.line}' >&2\n{b.code}"
        for b in blocks
        if not (b.needs_spark and no_spark)
    )
    proc, url = start(f"sqlite:///{tmp_path / 'tour.db'}", tmp_path)
    work, env = reader_shell(tmp_path, url)
    try:
        # When every block runs in order, as pasted
        done = subprocess.run(
            ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=800
        )
        assert done.returncode == 0, (
            f"the tour failed (exit {done.returncode}) in the block after the last marker:\n"
            f"{done.stderr[-4000:]}\n--- stdout:\n{done.stdout[-4000:]}"
        )
        # Then the story happened: 41 dead letters, all redriven in the end
        with Client(url) as client:
            assert list(client.dead_letters("orders-dlq")) == []
            # the fixed orders went back edited, each edit in its history
            fixed = [m for m in client.peek("orders", limit=20, include_claimed=True)
                     if any(e["event"] == "edited" for e in m.get("history", []))]  # fmt: skip
            assert fixed and all(m["body"]["customer"] == {"name": "Ada", "id": 7} for m in fixed)
            assert client.stats("orders")["messages"]["total"] == 41
            moved = sorted(t["moved"] for t in client.redrives("orders-dlq"))
    finally:
        stop(proc)
    if no_spark:
        assert moved == [15, 26]  # the orders without customer.id, fixed, then the rest
        missing(f"the tour's Spark part did not run: {no_spark}")
    # and the report, written before the redrive, shows the four failures
    assert moved == [12, 14, 15]  # the timeouts by their pattern, the fixed orders, the rest
    report = json.loads((work / "report" / "patterns.json").read_text())
    assert report["total"] == 41
    assert sorted(p["count"] for p in report["patterns"]) == [6, 8, 12, 15]
    assert "<svg" in (work / "report" / "report.html").read_text(encoding="utf-8")
