"""The SQLite store's files are its owner's alone: the database, its WAL and shared-memory
files 0600, and a directory it makes 0700, whatever the process's umask."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deadletter.domain.model import Queue, QueueSettings
from deadletter.storage.sqlite.backend import SQLiteStore


@pytest.fixture(params=[0o022, 0o000], ids=["umask-022", "umask-000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_database_wal_and_shm_are_created_0600_in_a_0700_directory(
    tmp_path: Path, umask: int
) -> None:
    # Given a store opened on a file in a directory that does not exist yet,
    path = tmp_path / "new" / "deadletter.db"
    store = SQLiteStore(path)
    try:
        # when it has written (so that the WAL and the shared memory exist),
        with store.transaction() as tx:
            tx.insert_queue(Queue("p", "a", QueueSettings(), 0.0, 0.0))
        with store.read() as tx:
            assert tx.get_queue("p", "a") is not None
        files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
        # then each file is readable and writable by its owner only, and so is the directory.
        assert {f.name: oct(mode(f)) for f in files} == {f.name: "0o600" for f in files}
        assert oct(mode(path.parent)) == "0o700"
    finally:
        store.close()


DEADLETTER = str(Path(sys.executable).parent / "deadletter")


def test_the_servers_data_directory_is_created_0700(tmp_path: Path, umask: int) -> None:
    # `serve` makes its data directory once it holds its port, before it serves; it is
    # stopped as soon as the database is there. `create-operator` makes the directory and the
    # database with no server.
    served, made = tmp_path / "served", tmp_path / "made"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [DEADLETTER, "serve", "--port", str(port), "--data-dir", str(served)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (served / "deadletter.db").exists():
            assert server.poll() is None, "serve stopped before it made its data directory"
            assert time.monotonic() < deadline, "serve made no data directory"
            time.sleep(0.05)
    finally:
        server.terminate()
        server.wait(timeout=60)
    subprocess.run(
        [DEADLETTER, "credentials", "create-operator", "--data-dir", str(made)],
        capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    assert (oct(mode(served)), oct(mode(made))) == ("0o700", "0o700")
    assert oct(mode(made / "deadletter.db")) == "0o600"
