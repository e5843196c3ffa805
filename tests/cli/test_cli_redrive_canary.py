"""`deadletter redrive start --canary`: the options reach the server, and go together."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from deadletter.api.app import AppOptions, build_app
from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage.base import Store
from tests.cli.test_cli import ok, run
from tests.support.servers import serving


@pytest.fixture
def url(store: Store) -> Iterator[str]:
    # A clock that stands still: the canary's watch never ends on its own.
    engine = Engine(store, clock=ManualClock())
    app = build_app(engine, AppOptions(), background=[Worker(engine, sweep_interval=3600)])
    with serving(app) as base:
        yield base


@pytest.fixture
def dead(url: str) -> str:
    """Given "orders" whose DLQ "orders-dlq" holds four of its dead letters."""
    ok(url, "queue", "create", "orders-dlq")
    ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "1")
    for body in ("a", "b", "c", "d"):
        ok(url, "send", "orders", body)
        claim_id, message_id = ok(url, "claim", "orders", "--quiet").split()
        ok(url, "reject", "orders", message_id, "--claim", claim_id, "--reason", "bad")
    return url


def test_a_canary_redrive_starts_with_its_sample_watch_and_threshold(dead: str) -> None:
    task = json.loads(
        ok(
            dead,
            "redrive",
            "start",
            "orders-dlq",
            "--reason",
            "rejected",
            "--canary",
            "50%",
            "--watch",
            "30",
            "--max-redeath",
            "25%",
            "--json",
        )
    )
    canary = task["canary"]
    assert (canary["requested"], canary["size"], canary["watch"], canary["max_redeath"]) == (
        "50%", 2, 30, 25)  # fmt: skip
    assert task["filter"]["reason"] == "rejected"


def test_the_canary_is_shown_in_words(dead: str) -> None:
    out = ok(dead, "redrive", "start", "orders-dlq", "--canary", "1")
    assert "canary: " in out and "of 1 moved" in out


@pytest.mark.parametrize(
    "args",
    [
        ("--watch", "30"),
        ("--max-redeath", "10%"),
        ("--canary", "1", "--max-redeath", "lots"),
        ("--canary", "1", "--watch", "0"),
        ("--seed", "7"),
        ("--force",),
        ("--canary", "1", "--seed", "-1"),
    ],
)
def test_canary_options_go_together_and_are_checked_before_the_server(
    dead: str, args: tuple[str, ...]
) -> None:
    assert run(dead, "redrive", "start", "orders-dlq", *args).exit_code == 2
    assert json.loads(ok(dead, "redrive", "status", "orders-dlq", "--json")) == []


def test_a_canary_the_server_refuses_exits_non_zero_with_its_words(dead: str) -> None:
    result = run(dead, "redrive", "start", "orders-dlq", "--canary", "0")
    assert result.exit_code != 0
    assert "canary" in result.output


def test_resume_is_refused_for_a_task_that_is_not_paused(dead: str) -> None:
    task = json.loads(ok(dead, "redrive", "start", "orders-dlq", "--canary", "1", "--json"))
    result = run(dead, "redrive", "resume", "orders-dlq", task["id"])
    assert result.exit_code != 0 and "not PAUSED" in result.output


def test_the_sample_s_coverage_and_seed_are_shown_at_start_and_in_status(dead: str) -> None:
    out = ok(dead, "redrive", "start", "orders-dlq", "--canary", "2", "--seed", "7", "--force")
    assert "canary sample: 2 dead letters drawn across" in out and "(seed 7)" in out
    task = json.loads(ok(dead, "redrive", "status", "orders-dlq", "--json"))[0]
    assert (task["canary"]["seed"], task["canary"]["force"]) == (7, True)
    shown = ok(dead, "redrive", "status", "orders-dlq", task["id"])
    assert "canary sample: " + task["canary"]["coverage"] in shown
