"""Dead letters stay as long as their DLQ keeps messages, on the Zaqar face, as the README's
tour makes them: a DLQ created with no settings, a source with `--dlq orders-dlq
--max-claims 3` and the default message TTL (an hour). Before, a dead letter kept its source's
expiry and left the DLQ, unseen, about an hour after it was sent."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from deadletter.api.app import AppOptions, build_app
from deadletter.client import DEFAULT_PROJECT
from deadletter.clock import ManualClock
from deadletter.domain.model import MAX_TTL
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage.base import Store
from tests.cli.test_cli import claim_one, ok
from tests.support.servers import serving

HOUR = 3600


@pytest.fixture
def served(store: Store, clock: ManualClock) -> Iterator[tuple[str, Engine]]:
    """The server on `clock`, its sweeps run by the test (`sweep`)."""
    engine = Engine(store, clock)
    app = build_app(engine, AppOptions(), background=[Worker(engine, sweep_interval=3600)])
    with serving(app) as base:
        yield base, engine


def sweep(engine: Engine) -> None:
    while engine.sweep_expired():
        pass


def tour(url: str, *dlq_options: str) -> str:
    """The README's first steps: a message failed by hand three times, the fourth claim moves
    it to orders-dlq; its id."""
    ok(url, "queue", "create", "orders-dlq")
    made = ok(
        url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "3", *dlq_options
    )
    # Dead letters that would leave within the hour are said when the policy is made.
    assert ("warning: dead letters of orders stay at most" in made) == bool(dlq_options)
    ok(url, "send", "orders", '{"order": 100}')
    for _ in range(3):
        claim, message = claim_one(url, "orders")
        ok(url, "nack", "orders", message, "--claim", claim)
    assert "nothing to claim" in ok(url, "claim", "orders").lower()
    return message


def test_a_dead_letter_of_the_readme_tour_is_still_there_two_hours_later(
    served: tuple[str, Engine], clock: ManualClock
) -> None:
    url, engine = served
    # Given the tour's dead letter
    message = tour(url)
    # when two hours have passed and the sweep has run
    clock.advance(2 * HOUR)
    sweep(engine)
    # I expect it in the DLQ still, with the DLQ's retention (the engine's longest TTL) ahead
    (dead,) = json.loads(ok(url, "dlq", "list", "orders-dlq", "--json"))
    assert dead["provenance"]["original_message_id"] == message
    assert dead["ttl"] == MAX_TTL
    stats = engine.stats(DEFAULT_PROJECT, "orders-dlq")
    assert (stats.expired_dropped, stats.dead_letters_expired) == (0, 0)
    # and `dlq list` and `queue show` to say when it will leave
    said = "the oldest dead letter expires"
    assert said in ok(url, "dlq", "list", "orders-dlq")
    shown = ok(url, "queue", "show", "orders-dlq")
    assert said in shown and "(in 13 d 22 h)" in shown


def test_a_dlq_whose_maximum_ttl_is_short_is_said_when_a_source_names_it(
    served: tuple[str, Engine],
) -> None:
    url, _ = served
    ok(url, "queue", "create", "orders-dlq", "--max-ttl", "900")
    made = ok(url, "queue", "create", "orders", "--dlq", "orders-dlq", "--max-claims", "3")
    assert "stay at most 900 s in orders-dlq (the maximum TTL of orders-dlq)" in made
    ok(url, "queue", "update", "orders-dlq", "--max-ttl", "86400")
    assert "warning" not in ok(url, "queue", "update", "orders", "--max-claims", "5")


def test_a_dead_letter_with_the_policys_dlq_ttl_leaves_then_counted(
    served: tuple[str, Engine], clock: ManualClock
) -> None:
    url, engine = served
    # Given the tour with `_dead_letter_queue_messages_ttl` 600 s (Zaqar's, from the move)
    tour(url, "--dlq-ttl", "600")
    clock.advance(599)
    sweep(engine)
    assert engine.stats(DEFAULT_PROJECT, "orders-dlq").total == 1
    # when those 600 s have passed
    clock.advance(2)
    sweep(engine)
    # I expect it gone, and counted as a dead letter that expired
    assert engine.stats(DEFAULT_PROJECT, "orders-dlq").total == 0
    out = ok(url, "queue", "show", "orders-dlq")
    assert "of them dead letters" in out
    assert ok(url, "queue", "show", "orders-dlq", "--json").count('"dead_letters_expired": 1') == 1


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (("--dlq-ttl", "600"), "its queues' dead letters stay at most 600 s in their DLQ"),
        (("--max-ttl", "900"), "a DLQ it makes keeps dead letters at most 900 s"),
        (("--dlq-ttl", "3600", "--max-ttl", "86400"), None),
    ],
)
def test_a_template_whose_dead_letters_would_stay_less_than_an_hour_says_so(
    served: tuple[str, Engine], options: tuple[str, ...], said: str | None
) -> None:
    url, _ = served
    ok(url, "queue", "create", "orders-dlq")
    made = ok(url, "template", "create", "orders", "--pattern", "orders-*", "--max-claims", "3",
              "--dlq", "orders-dlq", *options)  # fmt: skip
    if said is None:
        assert "warning" not in made
    else:
        assert f"warning: template orders: {said}" in made
