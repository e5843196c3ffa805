"""docs/api.md's curl examples of the queue API, run as written against a live server: each
request answers 2xx (a claim's `grace` below its floor, or a second `Content-Type`, would not)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from deadletter.client import Client
from tests.cli.test_cli import url  # noqa: F401 (the live-server fixture)

API = Path(__file__).parents[1] / "docs" / "api.md"
BLOCK = re.compile(r"^```sh\n(?P<code>.*?)^```", re.S | re.M)


def sh_blocks() -> list[str]:
    return [m.group("code") for m in BLOCK.finditer(API.read_text(encoding="utf-8"))]


def test_the_queue_examples_answer_2xx(url: str) -> None:  # noqa: F811
    blocks = sh_blocks()
    (setup,) = (b for b in blocks if "U=http" in b)
    (queue_block,) = (b for b in blocks if "/claims?limit=5" in b)
    # Given the example's queues, and a claimed message for its $MID and $CID
    with Client(url) as client:
        client.create_queue("orders-dlq")
        client.create_queue("orders", {"_max_claim_count": 3, "_dead_letter_queue": "orders-dlq"})
        client.send("orders", ["for the DELETE"])
        cid, (message,) = client.claim("orders")
    # When the examples run as pasted, each curl reporting only its status
    script = (
        setup.replace("U=http://127.0.0.1:8888", f"U={url}")
        + "curl() { command curl -o /dev/null -w '%{http_code}\\n' \"$@\"; }\n"
        + queue_block
    )
    done = subprocess.run(
        ["bash", "-c", script],
        env={**os.environ, "MID": message["id"], "CID": str(cid)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    codes = done.stdout.split()
    # Then every request succeeded
    assert len(codes) == queue_block.count("curl -s")
    assert all(code.startswith("2") for code in codes), (codes, queue_block)
