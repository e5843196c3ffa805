"""`deadletter serve --workers N`: several processes on one port and one PostgreSQL database
serve the same queues, and a long poll in one is woken by a send that another handled."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg
import pytest
import uvicorn
from click.testing import CliRunner

from deadletter import server
from deadletter.cli.main import main
from deadletter.storage.base import Store
from tests.api.serve_process import start, stop
from tests.services import POSTGRES_URL, postgres_schema
from tests.support.polls import eventually

LONG_POLL = 20  # seconds; a receive that waits this long was not woken


def test_several_workers_on_sqlite_are_refused_with_the_reason(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["serve", "--workers", "2", "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    )
    assert result.exit_code != 0
    assert "--workers 2 needs a PostgreSQL store" in result.output
    assert not (tmp_path / "d.db").exists()


@pytest.mark.postgres
def test_two_workers_share_queues_and_wake_each_others_long_polls(tmp_path: Path) -> None:
    with postgres_schema() as db:
        proc, url = start(db, tmp_path, "--workers", "2")
        try:
            with connections_to_two_processes(url, per_process=2) as (a, watch, b, _):
                # Given a queue made through one process
                queue = sqs(a, "CreateQueue", QueueName="shared")["QueueUrl"]
                # a message sent through it is received and deleted through the other
                sqs(a, "SendMessage", QueueUrl=queue, MessageBody="across")
                (got,) = sqs(b, "ReceiveMessage", QueueUrl=queue)["Messages"]
                assert got["Body"] == "across"
                sqs(b, "DeleteMessage", QueueUrl=queue, ReceiptHandle=got["ReceiptHandle"])
                assert "Messages" not in sqs(a, "ReceiveMessage", QueueUrl=queue)

                # When one process holds a long poll and the other handles a send
                woken: list[tuple[float, Any]] = []

                def long_poll() -> None:
                    started = time.monotonic()
                    answer = sqs(a, "ReceiveMessage", QueueUrl=queue, WaitTimeSeconds=LONG_POLL)
                    woken.append((time.monotonic() - started, answer))

                poller = threading.Thread(target=long_poll)
                poller.start()
                # only once the poll waits: sent earlier, the message would be found, not awaited
                deadline = time.monotonic() + LONG_POLL
                while long_polls_waiting(watch) < 1:
                    assert time.monotonic() < deadline, "the long poll never started waiting"
                    time.sleep(0.02)
                sqs(b, "SendMessage", QueueUrl=queue, MessageBody="wake up")
                poller.join(LONG_POLL * 2)
            # I expect the poll to return the message before its wait ran out
            ((waited, answer),) = woken
            assert [m["Body"] for m in answer["Messages"]] == ["wake up"]
            assert waited < LONG_POLL
        finally:
            stop(proc)


@pytest.mark.postgres
def test_workers_whose_supervisor_is_killed_stop_and_free_the_port(tmp_path: Path) -> None:
    with postgres_schema() as db:
        proc, url = start(db, tmp_path, "--workers", "2")
        started = children_of(proc.pid)  # the two workers and multiprocessing's tracker
        try:
            assert sum("spawn_main" in cmdline(pid) for pid in started) == 2
            # When the supervisor is killed outright, with no chance to stop its workers
            proc.kill()
            proc.wait(timeout=30)
            # I expect everything it started to stop by itself, and the port to be free again
            deadline = time.monotonic() + 30
            while any(alive(pid) for pid in started) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert [pid for pid in started if alive(pid)] == []
            with socket.socket() as s:
                s.bind(("127.0.0.1", urlsplit(url).port or 0))
        finally:
            stop(proc)
            for pid in started:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


@pytest.mark.postgres
def test_a_worker_replaced_while_its_database_is_away_waits_for_it(tmp_path: Path) -> None:
    with postgres_schema() as db:
        proc, url = start(db, tmp_path, "--workers", "2")
        schema = unquote(db).rsplit("search_path=", 1)[1]
        try:
            with connections_to_two_processes(url):
                pass  # both workers serve, so neither is still starting when one dies
            (first, other) = workers_of(proc.pid)
            # Given the database's schema gone away, and a worker that dies meanwhile
            with schema_away(schema) as come_back:
                os.kill(first, signal.SIGKILL)
                # I expect one replacement that waits, not one replacement after another.
                # uvicorn's supervisor notices a death within one check of every worker (a
                # check waits up to 5 s for a busy worker's answer) ...
                replacements = eventually(
                    lambda: set(workers_of(proc.pid)) - {first, other}, 30, "new workers"
                )
                # ... and would replace a worker that died of the missing schema again within
                # 6 s (the check of a dying worker waits out those 5 s): this watches for 10.
                seen = set(replacements)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    seen.update(workers_of(proc.pid))
                    time.sleep(0.05)
                assert seen - {other} == replacements and len(replacements) == 1
                assert alive(other)
                # and, once the schema is back, both processes serving again
                come_back()
            deadline = time.monotonic() + 30  # the replacement's next try comes within 16 s
            while True:
                try:
                    with connections_to_two_processes(url) as (a, b):
                        queue = sqs(a, "CreateQueue", QueueName="back")["QueueUrl"]
                        sqs(b, "SendMessage", QueueUrl=queue, MessageBody="served")
                    break
                # Only one process serves yet, or a connection found early sat idle past the
                # server's keep-alive while the search went on, and was closed.
                except (AssertionError, ConnectionError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        finally:
            stop(proc)


def test_a_stop_that_came_while_a_worker_loaded_its_app_ends_its_wait_for_the_database(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stop = threading.Event()
    tries: list[str] = []

    def database_away(url: str) -> Store:
        tries.append(url)
        stop.set()  # so that a wait which missed the stop ends after one try, not never
        raise OSError("connection refused")

    monkeypatch.setattr(server, "open_store", database_away)
    # Given uvicorn's handlers, which only note a stop for later, in place while a worker
    # loads its app, and the supervisor's SIGTERM arriving then
    uvicorn_server = uvicorn.Server(uvicorn.Config("deadletter.server:worker_app"))
    previous = signal.signal(signal.SIGTERM, uvicorn_server.handle_exit)
    try:
        signal.raise_signal(signal.SIGTERM)
        # When the app then waits for its database
        with pytest.raises(SystemExit):
            server._open_when_reachable("postgresql://away/db", stop)
    finally:
        signal.signal(signal.SIGTERM, previous)
    # I expect it to stop at once, without trying the database
    assert tries == []


@pytest.mark.postgres
@pytest.mark.parametrize("stop_with", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill"])
def test_a_worker_waiting_for_its_database_stops_with_its_supervisor(
    tmp_path: Path, stop_with: signal.Signals
) -> None:
    with postgres_schema() as db:
        proc, url = start(db, tmp_path, "--workers", "2")
        schema = unquote(db).rsplit("search_path=", 1)[1]
        with connections_to_two_processes(url):
            pass  # both workers serve, so neither is still starting when one dies
        everything = set(children_of(proc.pid))
        try:
            # Given a replacement worker waiting for the database's schema to come back
            (first, other) = workers_of(proc.pid)
            with schema_away(schema):
                os.kill(first, signal.SIGKILL)
                everything |= eventually(
                    lambda: set(workers_of(proc.pid)) - {first, other}, 30, "new workers"
                )
                # When the supervisor is stopped (or killed outright)
                os.kill(proc.pid, stop_with)
                proc.wait(timeout=60)
                # I expect every process it started to end, the waiting one too
                deadline = time.monotonic() + 30
                while any(alive(pid) for pid in everything) and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert [cmdline(pid) for pid in everything if alive(pid)] == []
        finally:
            stop(proc)
            for pid in everything:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


@contextmanager
def schema_away(schema: str) -> Iterator[Callable[[], None]]:
    """The database's `schema` renamed away, as a dropped or not yet restored schema looks to
    a server; it comes back when the block calls the function given, or at the latest when
    the block ends (so that the schema can be dropped afterwards)."""
    away = f"{schema}_away"

    def come_back() -> None:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            named = "SELECT 1 FROM pg_namespace WHERE nspname = %s"
            if conn.execute(named, (away,)).fetchone():
                conn.execute(f'ALTER SCHEMA "{away}" RENAME TO "{schema}"')

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'ALTER SCHEMA "{schema}" RENAME TO "{away}"')
    try:
        yield come_back
    finally:
        come_back()


def workers_of(supervisor: int) -> list[int]:
    return [pid for pid in children_of(supervisor) if "spawn_main" in cmdline(pid)]


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux's /proc)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def sqs(conn: http.client.HTTPConnection, action: str, **params: Any) -> Any:
    """One call of the SQS JSON protocol on `conn` (auth is off on loopback)."""
    headers = {"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": "application/x-amz-json-1.0"}
    conn.request("POST", "/", body=json.dumps(params), headers=headers)
    response = conn.getresponse()
    body = response.read()
    assert response.status == 200, body
    return json.loads(body)


@contextmanager
def connections_to_two_processes(
    url: str, per_process: int = 1
) -> Iterator[tuple[http.client.HTTPConnection, ...]]:
    """Keep-alive connections that different worker processes accepted: `per_process` to
    the first process, then as many to the second, in that order."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    opened: list[http.client.HTTPConnection] = []
    by_pid: dict[int, list[http.client.HTTPConnection]] = {}
    try:
        while len(by_pid) < 2 or any(len(c) < per_process for c in by_pid.values()):
            assert len(opened) < 400, "every connection went to one process"
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=LONG_POLL * 2)
            opened.append(conn)
            conn.request("GET", "/v2/ping")
            conn.getresponse().read()
            assert conn.sock is not None
            pid = serving_pid(conn.sock, parts.port)
            if pid in by_pid or len(by_pid) < 2:
                by_pid.setdefault(pid, [])
                if len(by_pid[pid]) < per_process:
                    by_pid[pid].append(conn)
        first, second = by_pid.values()
        yield (*first, *second)
    finally:
        for conn in opened:
            conn.close()


def long_polls_waiting(conn: http.client.HTTPConnection) -> float:
    """The `deadletter_long_polls_waiting` gauge of the process that holds `conn`."""
    conn.request("GET", "/metrics")
    response = conn.getresponse()
    text = response.read().decode()
    assert response.status == 200, text
    (line,) = [x for x in text.splitlines() if x.startswith("deadletter_long_polls_waiting ")]
    return float(line.split()[1])


def serving_pid(client: socket.socket, server_port: int) -> int:
    """The process that holds the server's end of `client`'s connection (Linux's /proc)."""
    client_port = client.getsockname()[1]
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1], fields[2]
        if int(local.split(":")[1], 16) == server_port and int(remote.split(":")[1], 16) == (
            client_port
        ):
            inode = fields[9]
    assert inode is not None
    target = f"socket:[{inode}]"
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if any(
                os.readlink(f"/proc/{pid}/fd/{fd}") == target
                for fd in os.listdir(f"/proc/{pid}/fd")
            ):
                return int(pid)
        except OSError:
            continue
    raise AssertionError(f"no process holds {target}")


def test_help_lists_workers_with_its_environment_variable() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"], terminal_width=200)
    assert "--workers" in result.output and "DEADLETTER_WORKERS" in result.output
