"""An outage is an answer: a running server whose PostgreSQL misbehaves (through a proxy the
test controls) answers 503 while the fault lasts, loses no acknowledged write, delivers no
acknowledged message again, logs the outage once, and serves again when the database does.

The faces' accounting is in `outage_load.py`; the proxy in `tests/support/faults.py`.
"""

from __future__ import annotations

import calendar
import json
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest
from psycopg.conninfo import conninfo_to_dict

from tests.api.serve_process import start, stop
from tests.hardening.outage_load import QUEUE, Answer, Ledger, Load
from tests.services import postgres_schema
from tests.support.faults import FaultProxy

# The server cuts a statement that has not answered in statement_timeout + 2 s (the store's
# DEADLINE_GRACE); a short timeout keeps the black-holed phase short.
STATEMENT_TIMEOUT_MS = 1000
OK = range(200, 300)


@pytest.fixture
def proxied() -> Iterator[tuple[str, FaultProxy]]:
    """A database URL of a fresh schema that reaches PostgreSQL through a fault proxy."""
    with postgres_schema() as url:
        info = conninfo_to_dict(url)
        proxy = FaultProxy((str(info.get("host") or "127.0.0.1"), int(info.get("port") or 5432)))
        schema_option = parse_qs(urlsplit(url).query)["options"][0]
        options = f"{schema_option} -cstatement_timeout={STATEMENT_TIMEOUT_MS}"
        user = f"{info['user']}@" if info.get("user") else ""
        yield (
            f"postgresql://{user}127.0.0.1:{proxy.port}/{info.get('dbname', 'test')}"
            f"?connect_timeout=2&options={quote(options)}",
            proxy,
        )
        proxy.close()


def log_lines(data_dir: Path, url: str) -> list[dict[str, object]]:
    port = url.rsplit(":", 1)[1]
    text = (data_dir / f"server-{port}.log").read_text()
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def logged_at(line: dict[str, object]) -> float:
    """The epoch time of a log line (`2026-01-02T03:04:05.678Z`)."""
    stamp = str(line["time"])
    return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) + float(stamp[19:-1])


def wait_for(condition: object, timeout: float, what: str) -> float:
    """Seconds until `condition()` held; fails after `timeout`."""
    began = time.monotonic()
    while not condition():  # type: ignore[operator]
        assert time.monotonic() - began < timeout, f"timed out waiting for {what}"
        time.sleep(0.05)
    return time.monotonic() - began


@pytest.mark.postgres
@pytest.mark.timeout(240)
def test_postgres_faults_answer_503_and_lose_nothing(
    proxied: tuple[str, FaultProxy], tmp_path: Path
) -> None:
    db_url, proxy = proxied
    proc, url = start(db_url, tmp_path)
    try:
        assert httpx.put(f"{url}/v2/queues/{QUEUE}", headers=_cid(), json={}).status_code == 201
        ledger = Ledger()
        load = Load(url, ledger)
        load.start()
        # Given producers and consumers at work on both faces,
        wait_for(lambda: len(ledger.received) >= 30, 30, "the load to start")

        # when the link to the database slows down, connections are reset under open
        # transactions, packets vanish, and then the database is away for 5 s (after each
        # fault, until /v2/health says all is well again),
        def healthy() -> bool:
            return httpx.get(f"{url}/v2/health", timeout=60).status_code == 200

        phases: dict[str, tuple[float, float]] = {}
        recovery: dict[str, float] = {}
        began = time.time()
        proxy.mode("latency", delay=0.02)
        time.sleep(1.5)
        proxy.mode("pass")
        phases["latency"] = (began, time.time())
        recovery["latency"] = wait_for(healthy, 30, "health after latency")

        began = time.time()
        while time.time() - began < 1.5:
            proxy.reset()
            time.sleep(0.2)
        phases["reset"] = (began, time.time())
        recovery["reset"] = wait_for(healthy, 30, "health after resets")

        began = time.time()
        proxy.mode("blackhole")
        time.sleep(3.0)
        proxy.mode("pass")
        phases["blackhole"] = (began, time.time())
        recovery["blackhole"] = wait_for(healthy, 30, "health after the blackhole")

        cut = time.time()
        proxy.mode("down")
        began = time.time()  # every connection is reset and new ones are refused from here
        time.sleep(1.0)
        health_down = httpx.get(f"{url}/v2/health", timeout=60)
        time.sleep(4.0)
        ended = time.time()
        proxy.mode("pass")
        phases["outage"] = (began, ended)

        # then service is back on every face within seconds,
        back = {
            face: wait_for(
                lambda face=face: ledger.successes_since(ended, face) > 0, 30, f"{face} back"
            )
            for face in ("zaqar", "sqs-json", "sqs-query")
        }
        recovery["outage"] = wait_for(healthy, 30, "health after the outage")
        health_up = httpx.get(f"{url}/v2/health", timeout=60)
        load.stop_producing()
        wait_for(lambda: not ledger.lost(), 60, "every acknowledged message to be received")
        load.stop()
    finally:
        stop(proc)
    print(f"\nfirst 2xx after the outage (s): {back}; health ok after each phase: {recovery}")
    print(
        f"answers: {len(ledger.answers)}; acknowledged sends: {len(ledger.sent)};"
        f" acknowledged deletes: {len(ledger.deleted_at)}; late deletes: {ledger.late_deletes}"
    )
    for name, (first, last) in phases.items():
        inside = [a for a in ledger.answers if first <= a.started <= last]
        print(name, round(last - first, 1), _counts(inside))

    # I expect no 500 at any time, and each 503 in the face's own words;
    statuses = {a.status for a in ledger.answers}
    assert statuses <= {200, 201, 204, 503}, statuses
    assert all(a.proper_503 for a in ledger.answers if a.status == 503)
    # only 503s while the database was away, from every face and protocol;
    during = [a for a in ledger.answers if phases["outage"][0] <= a.started and a.ended <= ended]
    assert {a.face for a in during} == {"zaqar", "sqs-json", "sqs-query"}
    assert {a.status for a in during} == {503}, _counts(during)
    # no acknowledged write lost, no acknowledged message delivered again;
    assert ledger.sent and not ledger.lost()
    assert ledger.delivered_again() == []
    # /v2/health said why while it lasted, and that all is well after;
    assert health_down.status_code == 503
    assert health_down.json()["status"] == "unavailable"
    assert health_down.json()["storage_reachable"] is False
    assert health_down.json()["reason"] == "the database cannot be reached"
    assert health_up.status_code == 200 and health_up.json()["status"] == "ok"
    # and the log holds no traceback, as many lines saying the store came back as saying it
    # went away, and at most one change during the outage, after which it was down.
    lines = log_lines(tmp_path, url)
    assert not [line for line in lines if "exception" in line]
    changes = [
        (logged_at(line), str(line["message"]).startswith("store unavailable"))
        for line in lines
        if str(line["message"]).startswith(("store unavailable", "store available again"))
    ]
    went = [at for at, down in changes if down]
    assert went and len(went) == len(changes) - len(went)
    assert len([at for at, _ in changes if cut <= at <= ended]) <= 1
    assert [down for at, down in changes if at <= ended][-1] is True


def _cid() -> dict[str, str]:
    return {"Client-ID": "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"}


def _counts(answers: list[Answer]) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for a in answers:
        out[(a.face, a.status)] = out.get((a.face, a.status), 0) + 1
    return out
