"""/metrics label cardinality: a project's first N queue names are labels, the rest one value.

Given a metrics listener that labels 3 queues per project, when a producer sends to 10 queues,
I expect 3 queue labels and `~other` carrying the other 7 sends, in every queue-labelled family,
and another project's queues labelled on their own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hypothesis import given
from hypothesis import strategies as st

from deadletter.api.metrics import OTHER, Metrics
from deadletter.domain.errors import StoreUnavailable
from deadletter.domain.tags import ConsumerTag, TagCounts
from deadletter.engine import TagInfo


def _series(text: str, family: str) -> dict[str, float]:
    found = {}
    for line in text.splitlines():
        if line.startswith(family + "{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            found[f"{labels['project']}/{labels.get('queue', labels.get('dlq'))}"] = float(
                line.rsplit(" ", 1)[1]
            )
    return found


def test_queues_past_the_bound_count_under_one_label() -> None:
    metrics = Metrics(max_queues=3)
    for n in range(10):
        metrics.sent("alpha", f"q{n}", 1)
        metrics.redriven("alpha", f"q{n}", "task", 2)
    metrics.sent("beta", "q9", 5)
    text = metrics.exposition().decode()
    sent = _series(text, "deadletter_messages_sent_total")
    assert sent == {
        "alpha/q0": 1,
        "alpha/q1": 1,
        "alpha/q2": 1,
        f"alpha/{OTHER}": 7,
        "beta/q9": 5,
    }
    redriven = _series(text, "deadletter_messages_redriven_total")
    assert redriven[f"alpha/{OTHER}"] == 14
    assert len(redriven) == 4


def test_a_tag_label_is_bounded_too() -> None:
    metrics = Metrics(max_queues=2)
    for n in range(5):
        metrics.tag_delivery("alpha", "q", f"t{n}", "claimed", 1)
    text = metrics.exposition().decode()
    tags = set(re.findall(r'tag="([^"]*)"', text))
    assert tags == {"t0", "t1", OTHER}


def test_one_project_sees_only_its_samples_and_its_regions() -> None:
    metrics = Metrics()
    metrics.sent("alpha", "a", 1)
    metrics.sent("alpha@eu-west-1", "a", 1)
    metrics.sent("alphabet", "b", 1)
    metrics.sent("beta", "c", 1)
    text = metrics.exposition("alpha").decode()
    assert set(re.findall(r'project="([^"]*)"', text)) == {"alpha", "alpha@eu-west-1"}


def _tag(project: str, queue: str, name: str) -> ConsumerTag:
    return ConsumerTag(project, queue, name, created_at=0, start_seq=0, start_at=0)


@given(
    ready=st.lists(st.integers(0, 50), min_size=0, max_size=8),
    bound=st.integers(1, 4),
)
def test_tag_gauges_keep_the_bound_and_lose_no_message(ready: list[int], bound: int) -> None:
    """Tags past the bound are summed under OTHER; only labelled queues are read."""
    metrics = Metrics(max_queues=bound)
    read: list[list[tuple[str, str]]] = []

    def tags_of(queues: Iterable[tuple[str, str]]) -> list[TagInfo]:
        read.append(list(queues))
        return [
            TagInfo(_tag("alpha", "q0", f"t{n}"), TagCounts(r, n, 0, 0))
            for n, r in enumerate(ready)
        ]

    metrics.watch_tags(tags_of)
    for n in range(bound + 1):
        metrics.sent("alpha", f"q{n}", 1)
    text = metrics.exposition().decode()
    assert read[-1] == [("alpha", f"q{n}") for n in range(bound)]  # not the queue under OTHER
    gauges = {
        family: {
            labels["tag"]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(family + "{")
            for labels in [dict(re.findall(r'(\w+)="([^"]*)"', line))]
        }
        for family in ("deadletter_tag_messages_ready", "deadletter_tag_messages_claimed")
    }
    expected = {f"t{n}" for n in range(min(bound, len(ready)))}
    if len(ready) > bound:
        expected.add(OTHER)
    assert set(gauges["deadletter_tag_messages_ready"]) == expected
    assert sum(gauges["deadletter_tag_messages_ready"].values()) == sum(ready)
    assert sum(gauges["deadletter_tag_messages_claimed"].values()) == sum(range(len(ready)))


def test_a_store_that_does_not_answer_leaves_the_counters() -> None:
    metrics = Metrics()

    def tags_of(queues: Iterable[tuple[str, str]]) -> list[TagInfo]:
        raise StoreUnavailable("the database cannot be reached")

    metrics.watch_tags(tags_of)
    metrics.sent("alpha", "q", 1)
    text = metrics.exposition().decode()
    assert _series(text, "deadletter_messages_sent_total") == {"alpha/q": 1}
    assert "deadletter_tag_messages_ready{" not in text


def test_a_tenant_gets_one_bound_for_all_its_regions() -> None:
    # Given a bound of 3 labelled queues, and a tenant sending to 2 queues in each of 5 regions
    metrics = Metrics(max_queues=3)
    regions = ["", "@eu-west-1", "@xx-yyy-1", "@xx-yyy-2", "@zz-qqq-9"]
    for region in regions:
        for n in range(2):
            metrics.sent(f"alpha{region}", f"q{n}", 1)
    sent = _series(metrics.exposition().decode(), "deadletter_messages_sent_total")
    # I expect 3 queue labels in all, and the other 7 sends under ~other
    named = [k for k in sent if not k.endswith("/" + OTHER)]
    assert len(named) == 3
    assert sum(v for k, v in sent.items() if k.endswith("/" + OTHER)) == 7
