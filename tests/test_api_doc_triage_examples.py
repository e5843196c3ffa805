"""docs/api.md's examples of the dead-letter filter language and of edit and retry, run as
written against a live server: each request answers 2xx, and the edit did what it says."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from deadletter.client import Client
from tests.cli.test_cli import url  # noqa: F401 (the live-server fixture)

API = Path(__file__).parents[1] / "docs" / "api.md"
BLOCK = re.compile(r"^```sh\n(?P<code>.*?)^```", re.S | re.M)


def sh_blocks() -> list[str]:
    return [m.group("code") for m in BLOCK.finditer(API.read_text(encoding="utf-8"))]


MARKERS = ("dead_letters/count?attribute", "application/merge-patch+json -d", '"transform"')


def run_block(url: str, block: str, env: dict[str, str]) -> list[str]:  # noqa: F811
    (setup,) = (b for b in sh_blocks() if "U=http" in b)
    script = (
        setup.replace("U=http://127.0.0.1:8888", f"U={url}")
        + "curl() { command curl -o /dev/null -w '%{http_code}\\n' \"$@\"; }\n"
        + block
    )
    done = subprocess.run(["bash", "-c", script], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def no_task_running(client: Client) -> None:
    deadline = time.monotonic() + 20
    while any(t["status"] == "RUNNING" for t in client.redrives("orders-dlq")):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_the_filter_and_edit_examples_answer_2xx(url: str) -> None:  # noqa: F811
    blocks = sh_blocks()
    chosen = [next(b for b in blocks if marker in b) for marker in MARKERS]
    # Given the example's queues and a dead letter of orders for $DEAD
    with Client(url) as client:
        client.create_queue("orders-dlq")
        client.create_queue("orders", {"_max_claim_count": 3, "_dead_letter_queue": "orders-dlq"})
        client.send("orders", [{"total": 5}])
        cid, (message,) = client.claim("orders")
        client.dead_letter("orders", message["id"], cid, description="no customer")
        # When each example runs as pasted, every request succeeds
        for block in chosen:
            codes = run_block(url, block, {"DEAD": message["id"]})
            assert len(codes) == block.count("curl -s")
            assert all(code.startswith("2") for code in codes), (codes, block)
            no_task_running(client)
        # and the edited order went back to its queue, its edits in its history
        (back,) = client.peek("orders", include_claimed=True)
    assert back["body"] == {"total": 5, "customer": {"id": "c-0"}}
    assert back["attributes"]["fixed"] == {"type": "String", "value": "yes"}
    assert [e["event"] for e in back["history"]] == [
        "dead_lettered", "edited", "edited", "redriven"
    ]  # fmt: skip
