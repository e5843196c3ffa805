"""`deadletter redrive auto ...`: a DLQ's automatic redrive set, shown, stopped, resumed and
deleted from the command line, its rounds run by the server's worker."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from deadletter.api.app import AppOptions, build_app
from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from tests.cli.test_cli import ok, run
from tests.support.servers import serving


@pytest.fixture
def engine(store: Store) -> Engine:
    return Engine(store, clock=ManualClock())


@pytest.fixture
def url(engine: Engine) -> Iterator[str]:
    # No background worker: the test runs the rounds itself (`engine.run_auto_redrives`).
    with serving(build_app(engine, AppOptions())) as base:
        yield base


@pytest.fixture
def dead(url: str) -> str:
    """Given "orders" whose DLQ "orders-dlq" holds two of its dead letters."""
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "1")
    for body in ("a", "b"):
        ok(url, "send", "orders", body)
        claim_id, message_id = ok(url, "claim", "orders", "--quiet").split()
        ok(url, "reject", "orders", message_id, "--claim", claim_id, "--reason", "bad")
    return url


def test_set_show_stop_resume_delete(dead: str, engine: Engine) -> None:
    out = ok(dead, "redrive", "auto", "set", "orders-dlq", "--source", "orders",
             "--every", "10m", "--max-rounds", "5", "--canary", "50%", "--watch", "30")  # fmt: skip
    assert "auto-redrive of orders-dlq: active" in out
    assert "selects:     source_queue=orders" in out
    assert "every:       600 s; each dead letter at most 5 rounds" in out
    assert "canary:      50%, watched 30 s, up to 0% may die again" in out
    engine.run_auto_redrives()
    shown = json.loads(ok(dead, "redrive", "auto", "show", "orders-dlq", "--json"))
    assert shown["rounds"] == 1 and shown["last_round"]["outcome"] == "running"
    # The round is a redrive task like any other.
    assert shown["last_round"]["task_id"] in ok(dead, "redrive", "status", "orders-dlq", "--wide")
    out = ok(dead, "redrive", "auto", "show", "orders-dlq")
    assert "rounds:      1" in out and "last round:" in out and "running" in out
    assert (
        ok(dead, "redrive", "auto", "stop", "orders-dlq") == "auto-redrive of orders-dlq: stopped\n"
    )
    assert "next round:  (none: stopped)" in ok(dead, "redrive", "auto", "show", "orders-dlq")
    assert "active, next round" in ok(dead, "redrive", "auto", "resume", "orders-dlq")
    refused = run(dead, "redrive", "auto", "resume", "orders-dlq")
    assert refused.exit_code == 1 and "Automatic redrive active" in refused.output
    assert (
        ok(dead, "redrive", "auto", "delete", "orders-dlq")
        == "auto-redrive of orders-dlq: deleted\n"
    )
    missing = run(dead, "redrive", "auto", "show", "orders-dlq")
    assert missing.exit_code == 1
    assert "orders-dlq has no automatic redrive; set one: deadletter redrive auto set" in (
        missing.output
    )


def test_the_whole_dlq_is_said_with_all(dead: str) -> None:
    out = ok(dead, "redrive", "auto", "set", "orders-dlq", "--all", "--every", "1h",
             "--max-rounds", "2", "--stopped")  # fmt: skip
    assert "selects:     the whole DLQ" in out and "orders-dlq: stopped" in out
    assert "every:       3600 s" in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--every", "10m", "--max-rounds", "5"), "--all for the whole DLQ"),
        (("--all", "--reason", "rejected", "--every", "10m", "--max-rounds", "5"), "not both"),
        (("--all", "--every", "soon", "--max-rounds", "5"), "is not a span"),
        (("--all", "--every", "10m", "--max-rounds", "0"), "--max-rounds"),
        (("--all", "--every", "30s", "--max-rounds", "5"), "interval must be an integer from 60"),
        (("--all", "--every", "10m", "--max-rounds", "5", "--watch", "30"), "go with --canary"),
    ],
)
def test_a_bad_set_is_refused_with_what_to_give(
    dead: str, args: tuple[str, ...], words: str
) -> None:
    result = run(dead, "redrive", "auto", "set", "orders-dlq", *args)
    assert result.exit_code != 0
    assert words in result.output
    assert run(dead, "redrive", "auto", "show", "orders-dlq").exit_code == 1
