"""`deadletter serve` with a `--db` it cannot use says why in one line and exits non-zero,
before anything starts, and creates nothing; and the access-log flag holds in every process
mode."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

from deadletter.storage import open_store
from tests.api.serve_process import DEADLETTER, free_port, start, stop
from tests.services import POSTGRES_URL, postgres_schema


def _serve(tmp_path: Path, db: str) -> tuple[int, str, float]:
    began = time.monotonic()
    done = subprocess.run(
        [DEADLETTER, "serve", "--port", str(free_port()), "--db", db],
        capture_output=True, text=True, timeout=30, cwd=tmp_path,
        env={**os.environ, "DEADLETTER_DATA_DIR": str(tmp_path / "data")},
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr, time.monotonic() - began


def _one_line(tmp_path: Path, db: str, *words: str) -> None:
    code, output, seconds = _serve(tmp_path, db)
    lines = output.strip().splitlines()
    assert code != 0 and len(lines) == 1, output
    assert "--db" in lines[0] and all(w in lines[0] for w in words), lines[0]
    assert seconds < 8, f"took {seconds:.1f} s"


SCHEMES = ["mysql", "mariadb", "redis", "mongodb", "http", "file", "sqlite3", "postgresqlx", "pg"]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_unknown_scheme_is_refused_and_nothing_is_created(tmp_path: Path, scheme: str) -> None:
    _one_line(tmp_path, f"{scheme}://x/db", "unknown scheme", scheme)
    assert list(tmp_path.iterdir()) == []  # no file named `mysql:/x/db`, no data directory


@pytest.mark.parametrize("form", ["sqlite:///{}/missing/d.db", "sqlite:///{}/a/b/c/d.db"])
def test_a_missing_directory_is_refused_not_created(tmp_path: Path, form: str) -> None:
    _one_line(tmp_path, form.format(tmp_path), "does not exist")
    assert not (tmp_path / "missing").exists() and not (tmp_path / "a").exists()


def test_a_relative_path_is_named_as_resolved_with_the_four_slashes_beside_it(
    tmp_path: Path,
) -> None:
    # Given `sqlite:///tmp/x.db`, which names tmp/x.db under the working directory
    # When it is served from a directory without a `tmp`, I expect the refusal to name the
    # directory it looked for and the spelling of an absolute path
    _one_line(tmp_path, "sqlite:///tmp/x.db", f"{tmp_path / 'tmp'} does not exist", "sqlite:////")
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_no_database_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.db").write_text("not a database\n")
    _one_line(tmp_path, f"sqlite:///{tmp_path / 'notes.db'}", "not a database")


def test_a_read_only_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "ro.db"
    open_store(f"sqlite:///{db}").close()  # migrated, as a server leaves it
    # File modes do not hold root back; the immutable flag holds everyone back.
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(db)], check=False).returncode:
        if os.geteuid() == 0:
            pytest.skip("root ignores file modes, and this filesystem has no immutable flag")
        db.chmod(0o444)
    try:
        _one_line(tmp_path, f"sqlite:///{db}", "readonly")
    finally:
        if chattr is not None:
            subprocess.run([chattr, "-i", str(db)], check=False)


@pytest.mark.postgres
def test_a_missing_postgres_database_is_refused_with_its_reason(tmp_path: Path) -> None:
    base = POSTGRES_URL.rsplit("/", 1)[0]
    _one_line(tmp_path, f"{base}/no_such_db_{uuid.uuid4().hex[:8]}", "does not exist")


def _access_lines(tmp_path: Path, db: str, *flags: str) -> int:
    data = tmp_path / f"run-{uuid.uuid4().hex[:6]}"
    data.mkdir()
    proc, url = start(db, data, "--log-format", "json", *flags)
    try:
        for _ in range(4):  # more requests than processes: each process answers some
            httpx.get(f"{url}/v2/queues", headers={"Client-ID": str(uuid.uuid4())})
    finally:
        stop(proc)
    lines = [json.loads(x) for x in next(data.glob("server-*.log")).read_text().splitlines()]
    return sum(1 for line in lines if line.get("logger") == "uvicorn.access")


@pytest.mark.postgres
def test_no_access_log_holds_with_several_workers(tmp_path: Path) -> None:
    with postgres_schema() as db:
        assert _access_lines(tmp_path, db, "--workers", "2", "--no-access-log") == 0
        assert _access_lines(tmp_path, db, "--workers", "2", "--access-log") >= 4
