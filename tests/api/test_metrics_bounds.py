"""/metrics label cardinality: a project's first N queue names are labels, the rest one value.

Given a metrics listener that labels 3 queues per project, when a producer sends to 10 queues,
I expect 3 queue labels and `~other` carrying the other 7 sends, in every queue-labelled family,
and another project's queues labelled on their own.
"""

from __future__ import annotations

import re

from deadletter.api.metrics import OTHER, Metrics


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
