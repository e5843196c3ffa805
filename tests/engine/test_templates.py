"""Queue templates: stored per project, the most specific match wins, and a queue created
without settings gets the template's (Solace's endpoint templates)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

import pytest

from deadletter.domain import errors
from deadletter.domain.model import DEFAULT_DEAD_LETTER_QUEUE, QueueSettings
from deadletter.domain.templates import TemplateSettings
from deadletter.engine import templates
from deadletter.engine.engine import Engine
from deadletter.engine.templates import literal_prefix
from deadletter.storage import open_store
from tests.engine.helpers import P, fail, send


def test_templates_are_created_listed_changed_and_deleted(engine: Engine) -> None:
    t = engine.templates
    t.create(P, "orders", pattern="orders-*", settings=TemplateSettings(max_claims=3))
    with pytest.raises(errors.Conflict):
        t.create(P, "orders", pattern="x*", settings=TemplateSettings())
    t.create(P, "all", pattern="*", settings=TemplateSettings(default_ttl=120))
    assert [x.name for x in t.all(P)] == ["all", "orders"]
    assert t.all("other") == []
    changed = t.change(P, "orders", change=lambda old: replace(old, pattern="o*"))
    assert t.get(P, "orders").pattern == changed.pattern == "o*"
    assert t.delete(P, "orders") is True and t.delete(P, "orders") is False
    with pytest.raises(errors.NotFound):
        t.get(P, "orders")


@pytest.mark.parametrize(
    ("pattern", "settings", "words"),
    [
        ("", TemplateSettings(), "pattern"),
        ("a/b*", TemplateSettings(), "pattern"),
        ("*", TemplateSettings(max_claims=0), "max claim count"),
        ("*", TemplateSettings(dlq="d"), "need its max claims"),
        ("*", TemplateSettings(max_claims=1, dlq="no such!"), "not the name of a queue"),
        ("*", TemplateSettings(min_ttl=10, max_ttl=5), "minimum"),
        ("*", TemplateSettings(default_ttl=0), "default message TTL"),
    ],
)
def test_a_template_is_checked_before_it_is_stored(
    engine: Engine, pattern: str, settings: TemplateSettings, words: str
) -> None:
    with pytest.raises(errors.InvalidInput, match=words):
        engine.templates.create(P, "t", pattern=pattern, settings=settings)
    assert engine.templates.all(P) == []


def test_the_longest_literal_prefix_wins_then_the_template_name(engine: Engine) -> None:
    assert [literal_prefix(p) for p in ("*", "orders-*", "orders-eu-?", "exact")] == [0, 7, 10, 5]
    t = engine.templates
    t.create(P, "catch-all", pattern="*", settings=TemplateSettings(default_ttl=100))
    t.create(P, "orders", pattern="orders-*", settings=TemplateSettings(default_ttl=200))
    t.create(P, "orders-eu", pattern="orders-eu-*", settings=TemplateSettings(default_ttl=300))
    t.create(P, "b-same", pattern="orders-e*", settings=TemplateSettings(default_ttl=400))
    t.create(P, "a-same", pattern="orders-e?", settings=TemplateSettings(default_ttl=500))
    chosen = {q: t.for_queue(P, q) for q in ("misc", "orders-us", "orders-eu-1", "orders-ex")}
    assert {q: x.name if x else None for q, x in chosen.items()} == {
        "misc": "catch-all",
        "orders-us": "orders",
        "orders-eu-1": "orders-eu",
        # orders-e* and orders-e? are equally specific: the first by name wins.
        "orders-ex": "a-same",
    }
    assert t.create_queue(P, "orders-ex").settings.default_ttl == 500


def test_a_queue_created_from_a_template_dead_letters_to_its_dlq(engine: Engine) -> None:
    # Given a template for orders-* with 1 claim and DLQ orders-dlq (which it also matches),
    engine.templates.create(
        P,
        "orders",
        pattern="orders-*",
        settings=TemplateSettings(max_claims=1, dlq="orders-dlq", max_ttl=600),
    )
    dlq = engine.templates.create_queue(P, "orders-dlq")
    # the DLQ gets the template's TTLs but no policy (never its own DLQ),
    assert dlq.settings.dead_letter is None and dlq.settings.max_ttl == 600
    q = engine.templates.create_queue(P, "orders-eu")
    assert q.settings.dead_letter is not None and q.settings.dead_letter.target == "orders-dlq"
    assert q.settings.default_ttl == 600  # the lower maximum brings the default down
    # and a poisoned message of orders-eu ends in orders-dlq.
    send(engine, "orders-eu", "poison")
    fail(engine, "orders-eu", 1)
    engine.claim(P, "orders-eu", limit=10)
    assert engine.stats(P, "orders-dlq").by_source == {"orders-eu": 1}


def test_a_template_without_a_dlq_uses_the_default_one(engine: Engine) -> None:
    engine.templates.create(P, "all", pattern="*", settings=TemplateSettings(max_claims=2))
    q = engine.templates.create_queue(P, "jobs")
    assert q.settings.dead_letter is not None
    assert q.settings.dead_letter.target == DEFAULT_DEAD_LETTER_QUEUE
    assert q.settings.dead_letter_default is True
    # The default DLQ, created for it, matches "*" too but got no policy.
    assert engine.get_queue(P, DEFAULT_DEAD_LETTER_QUEUE).settings.dead_letter is None


def test_what_the_creator_states_wins_over_the_template(engine: Engine) -> None:
    engine.templates.create(
        P,
        "all",
        pattern="*",
        settings=TemplateSettings(default_ttl=120, respect_ttl=True, max_ttl=300),
    )
    q = engine.templates.create_queue(
        P, "mine", build=lambda base: base.with_changes(default_ttl=90), base=QueueSettings()
    )
    assert (q.settings.default_ttl, q.settings.max_ttl, q.settings.respect_ttl) == (90, 300, True)
    # Queues created through Engine.create_queue with settings take them as given.
    assert engine.create_queue(P, "explicit").settings.respect_ttl is None


def test_changing_a_template_leaves_existing_queues_alone(engine: Engine) -> None:
    engine.templates.create(P, "all", pattern="*", settings=TemplateSettings(default_ttl=120))
    engine.templates.create_queue(P, "old")
    engine.templates.change(P, "all", change=lambda t: replace(t, settings=TemplateSettings()))
    assert engine.get_queue(P, "old").settings.default_ttl == 120


def test_a_template_naming_a_missing_dlq_refuses_the_queue(engine: Engine) -> None:
    engine.templates.create(
        P, "all", pattern="*", settings=TemplateSettings(max_claims=1, dlq="nowhere")
    )
    with pytest.raises(errors.DeadLetterTargetMissing):
        engine.templates.create_queue(P, "jobs")
    assert engine.find_queue(P, "jobs") is None


def _race(store_url: str, create: Callable[[Engine, int], None], racers: int = 8) -> list[str]:
    """`create(engine, i)` by `racers` threads at once over two stores on one database (two
    server processes); what each got."""
    stores = [open_store(store_url), open_store(store_url)]
    try:
        engines = [Engine(s) for s in stores]
        start = threading.Barrier(racers)
        outcomes: list[str] = []

        def run(i: int) -> None:
            start.wait()
            try:
                create(engines[i % 2], i)
                outcomes.append("created")
            except (errors.LimitExceeded, errors.TemplatePatternTaken):
                outcomes.append("refused")

        threads = [threading.Thread(target=run, args=(i,)) for i in range(racers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(engines[0].templates.all(P)) == outcomes.count("created")
        return sorted(outcomes)
    finally:
        for s in stores:
            s.close()


def test_racing_creators_in_two_processes_stop_exactly_at_the_template_cap(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(templates, "TEMPLATES_PER_PROJECT", 3)
    outcomes = _race(
        store_url,
        lambda e, i: e.templates.create(P, f"t{i}", pattern=f"q{i}-*", settings=TemplateSettings()),
    )
    assert outcomes == ["created"] * 3 + ["refused"] * 5


def test_racing_creators_of_one_pattern_leave_one_template_with_it(store_url: str) -> None:
    outcomes = _race(
        store_url,
        lambda e, i: e.templates.create(
            P, f"t{i}", pattern="orders-*", settings=TemplateSettings()
        ),
    )
    assert outcomes == ["created"] + ["refused"] * 7
