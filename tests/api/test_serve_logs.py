"""The server's log: text for a person on a terminal, JSON otherwise or when asked; access lines
only with --access-log, without the signatures and credentials a query string may carry; a
busy port said before anything starts."""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import httpx
from hypothesis import given
from hypothesis import strategies as st

from deadletter.logs import REDACTED, RedactQuery, configure_logging, redact_query
from deadletter.terminal import NOT_SHOWN
from tests.api.serve_process import DEADLETTER, start, stop

# Parameter names that carry a secret: presigned SigV4 and SigV2 URLs, Zaqar's signed URLs.
SECRET_NAMES = [
    "X-Amz-Signature",
    "X-Amz-Credential",
    "X-Amz-Security-Token",
    "Signature",
    "AWSAccessKeyId",
    "URL-Signature",
    "x-amz-signature",
]
PLAIN_NAMES = ["Action", "limit", "marker", "X-Amz-Date", "X-Amz-Expires", "claim_id", "echo"]
VALUES = st.text(
    alphabet=st.characters(blacklist_characters="&=#", blacklist_categories=("Cs",)), min_size=1
).map(lambda v: quote(v, safe=""))


@given(
    st.lists(st.tuples(st.sampled_from(SECRET_NAMES + PLAIN_NAMES), VALUES), min_size=1, max_size=8)
)
def test_secret_query_values_are_redacted_and_the_rest_kept(pairs: list[tuple[str, str]]) -> None:
    target = "/v2/queues/q/messages?" + "&".join(f"{k}={v}" for k, v in pairs)
    redacted = redact_query(target)
    path, _, query = redacted.partition("?")
    assert path == "/v2/queues/q/messages"
    assert query.split("&") == [
        f"{k}={REDACTED}" if k in SECRET_NAMES else f"{k}={v}" for k, v in pairs
    ]


def test_the_access_line_of_a_presigned_url_keeps_no_signature() -> None:
    # uvicorn's access line: client, method, path with query, HTTP version, status
    target = "/?Action=ListQueues&X-Amz-Credential=AKID%2F20261125&X-Amz-Signature=5e1f"
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, "", 0, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", target, "1.1", 200), None,
    )  # fmt: skip
    RedactQuery().filter(record)
    line = record.getMessage()
    assert "AKID" not in line and "5e1f" not in line
    assert "Action=ListQueues" in line and "X-Amz-Signature=REDACTED" in line


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def logged(stream: io.StringIO, fmt: str, event: Callable[[], None] | None = None) -> str:
    """What one event logs to `stream` in `fmt`; the process's logging is left as it was."""
    root = logging.getLogger()
    names = ("uvicorn", "uvicorn.error", "uvicorn.access")
    saved = (root.handlers[:], root.level, [logging.getLogger(n).propagate for n in names])
    configure_logging("info", fmt, stream)
    try:
        if event is None:
            logging.getLogger("deadletter.server").info("starting", extra={"port": 8888})
        else:
            event()
    finally:
        root.handlers[:], level, propagate = saved
        root.setLevel(level)
        for name, flag in zip(names, propagate, strict=True):
            logging.getLogger(name).propagate = flag
    return stream.getvalue()


def test_a_terminal_gets_text_and_anything_else_json_unless_asked() -> None:
    text = logged(Terminal(), "auto")
    assert text.split()[1:] == ["info", "starting", "port=8888"]
    doc = json.loads(logged(io.StringIO(), "auto"))
    assert (doc["message"], doc["port"]) == ("starting", 8888)
    assert json.loads(logged(Terminal(), "json"))["message"] == "starting"
    assert not logged(io.StringIO(), "text").startswith("{")


@given(st.text(min_size=1))
def test_a_terminal_gets_no_character_it_would_act_on(text: str) -> None:
    # A line may quote what a client wrote, in its message or in its fields.
    def event() -> None:
        access = '%s - "%s %s HTTP/%s" %d'  # uvicorn's (its logger's level is its own)
        log = logging.getLogger("deadletter.server")
        log.warning(access, "127.0.0.1:5", "GET", text, "1.1", 404)
        log.warning(text, extra={"queue": text})

    shown = logged(Terminal(), "text", event)
    assert not {c for c in shown if ord(c) in NOT_SHOWN}, shown
    assert len(shown.splitlines()) == 2  # a line an event


def test_access_lines_are_off_by_default_and_redacted_when_on(tmp_path: Path) -> None:
    query = "X-Amz-Credential=AKIDEXAMPLE%2F20261125&X-Amz-Signature=deadbeef&limit=5"
    headers = {"Client-ID": str(uuid.uuid4())}
    for extra, lines_wanted in (((), 0), (("--access-log",), 1)):
        data = tmp_path / f"run{len(extra)}"
        data.mkdir()
        proc, url = start(f"sqlite:///{data}/d.db", data, *extra)
        try:
            httpx.get(f"{url}/v2/queues?{query}", headers=headers)
        finally:
            stop(proc)
        (log,) = data.glob("server-*.log")
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        access = [line for line in lines if line["logger"] == "uvicorn.access"]
        assert len([a for a in access if "/v2/queues?" in a["message"]]) == lines_wanted
        assert "AKIDEXAMPLE" not in log.read_text() and "deadbeef" not in log.read_text()
        if lines_wanted:
            assert "X-Amz-Signature=REDACTED" in access[-1]["message"]
            assert "limit=5" in access[-1]["message"]


def test_a_busy_port_is_said_before_startup_with_the_flag_to_change_it(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [DEADLETTER, "serve", "--port", str(port), "--data-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            env={k: v for k, v in os.environ.items() if not k.startswith("DEADLETTER_")},
        )
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"error: port {port} is in use; choose another with --port or DEADLETTER_PORT"
    )
    assert "Application startup complete" not in done.stderr
    assert not (tmp_path / "deadletter.db").exists()  # nothing was opened


def test_help_names_the_log_flags_with_their_environment_variables() -> None:
    from click.testing import CliRunner

    from deadletter.cli.main import main

    shown = CliRunner().invoke(main, ["serve", "--help"], terminal_width=200).output
    for flag, env in (
        ("--log-format", "DEADLETTER_LOG_FORMAT"),
        ("--access-log", "DEADLETTER_ACCESS_LOG"),
    ):
        assert flag in shown and env in shown
