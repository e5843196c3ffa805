"""`deadletter serve`: its flags and environment variables, JSON logs, graceful shutdown."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
import uvicorn
import uvloop
from click.testing import CliRunner
from starlette.applications import Starlette
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from deadletter.cli.main import main
from deadletter.config import ServerConfig
from deadletter.server import OPEN_FILES_CEILING, _uvicorn_options
from tests.api.serve_process import DEADLETTER, free_port, start, stop, wait_for_ping


def test_help_lists_every_flag_with_its_environment_variable() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for flag, env in [
        ("--host", "DEADLETTER_HOST"),
        ("--port", "DEADLETTER_PORT"),
        ("--db", "DEADLETTER_DB"),
        ("--data-dir", "DEADLETTER_DATA_DIR"),
        ("--sweep-interval", "DEADLETTER_SWEEP_INTERVAL"),
        ("--log-level", "DEADLETTER_LOG_LEVEL"),
        ("--test-mode", "DEADLETTER_TEST_MODE"),
    ]:
        assert flag in result.output and env in result.output


def test_serve_answers_logs_json_and_stops_gracefully_on_sigterm(tmp_path: Path) -> None:
    # Given a server on a fresh SQLite file
    db = tmp_path / "d.db"
    proc, url = start(f"sqlite:///{db}", tmp_path)
    try:
        headers = {"Client-ID": str(uuid.uuid4())}
        r = httpx.post(
            f"{url}/v2/queues/q/messages", json={"messages": [{"body": 1}]}, headers=headers
        )
        assert r.status_code == 201
        assert "deadletter_messages_sent_total" in httpx.get(f"{url}/metrics").text
        assert httpx.get(f"{url}/openapi.json").json()["openapi"].startswith("3.")
        # when it gets SIGTERM, it exits cleanly
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        stop(proc)
    # and every log line is one JSON object
    (log,) = tmp_path.glob("server-*.log")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert any(line["message"] == "starting" for line in lines)
    assert lines[-1]["message"] == "stopped"
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    # and what it acknowledged is there after a restart
    proc, url = start(f"sqlite:///{db}", tmp_path)
    try:
        stats = httpx.get(f"{url}/v2/queues/q/stats", headers=headers).json()
        assert stats["messages"]["total"] == 1
    finally:
        stop(proc)


def test_default_database_lives_in_the_data_dir(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "deadletter"),
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path / "data"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_ping(f"http://127.0.0.1:{port}", proc)
    finally:
        stop(proc)
    assert (tmp_path / "data" / "deadletter.db").exists()


def test_the_servers_worker_runs_redrive_tasks(tmp_path: Path) -> None:
    proc, url = start(f"sqlite:///{tmp_path / 'w.db'}", tmp_path, "--sweep-interval", "0.1")
    try:
        with httpx.Client(base_url=url, headers={"Client-ID": str(uuid.uuid4())}) as c:
            # Given a message explicitly dead-lettered
            c.put("/v2/queues/dlq", json={})
            c.put("/v2/queues/src", json={"_max_claim_count": 5, "_dead_letter_queue": "dlq"})
            c.post("/v2/queues/src/messages", json={"messages": [{"body": "x"}]})
            claim = c.post("/v2/queues/src/claims", json={})
            cid = claim.headers["Location"].rsplit("/", 1)[1]
            mid = claim.json()["messages"][0]["id"]
            moved = c.post(f"/v2/queues/src/messages/{mid}/dead_letter?claim_id={cid}", json={})
            assert moved.status_code == 200
            # when a redrive task starts, the server's own worker completes it
            task = c.post("/v2/queues/dlq/redrives", json={}).json()
            deadline = time.monotonic() + 30
            while c.get(task["href"]).json()["status"] == "RUNNING":
                assert time.monotonic() < deadline, "the worker did not run the task"
                time.sleep(0.05)
            assert c.get(task["href"]).json()["status"] == "COMPLETED"
            assert c.get("/v2/queues/src/stats").json()["messages"]["free"] == 1
    finally:
        stop(proc)


def test_the_server_runs_uvicorn_on_httptools_and_uvloop() -> None:
    """The stack that costs the least CPU per request (`./dev bench framework`), named, so
    that a missing parser or loop fails at start instead of falling back to h11 or asyncio."""
    settings = uvicorn.Config(Starlette(), **_uvicorn_options(ServerConfig()))
    settings.load()
    assert issubclass(settings.http_protocol_class, HttpToolsProtocol)  # with its head bounded
    factory = settings.get_loop_factory()
    assert factory is not None
    loop = factory()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def _open_files_limit(pid: int) -> int:
    """The soft limit on open files of process `pid`, read from /proc."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError(f"no open files limit for {pid}")


def test_serve_raises_its_soft_limit_on_open_files_to_the_hard_one(tmp_path: Path) -> None:
    # Given a shell whose soft limit on open files is 256, below its hard limit
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip(f"the hard limit on open files is {hard}: nothing to raise it to")

    def low_soft_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    # When the server starts there
    port = free_port()
    with (tmp_path / "server.log").open("wb") as log:
        proc = subprocess.Popen(
            [DEADLETTER, "serve", "--port", str(port), "--data-dir", str(tmp_path)],
            stdout=log,
            stderr=log,
            preexec_fn=low_soft_limit,
        )
    try:
        wait_for_ping(f"http://127.0.0.1:{port}", proc)
        # I expect it to hold as many descriptors as the hard limit allows
        wanted = OPEN_FILES_CEILING if hard == resource.RLIM_INFINITY else hard
        assert _open_files_limit(proc.pid) == wanted
    finally:
        stop(proc)
