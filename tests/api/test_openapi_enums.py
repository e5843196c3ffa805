"""Every enum of the OpenAPI document is the set of values a type of the code declares: a
dead-letter reason, a task's status or a mode added there is documented the day it is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from deadletter.api.openapi import document
from deadletter.api.zaqar.parse import PATCH_OPS
from deadletter.api.zaqar.queues import PURGE_KINDS
from deadletter.domain.model import Overflow
from deadletter.domain.provenance import Reason
from deadletter.domain.redrive import CanaryDecision, SkipReason, TaskStatus

# The closed sets the document may list, as the code declares them.
DECLARED = [
    [r.value for r in Reason],
    [t.value for t in TaskStatus],
    [s.value for s in SkipReason],
    [c.value for c in CanaryDecision],
    [o.value for o in Overflow],
    list(PATCH_OPS),
    list(PURGE_KINDS),
]


def enums(node: Any, where: str = "") -> Iterator[tuple[str, list[Any]]]:
    """Every `enum` of the document, with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "enum":
                yield where, value
            else:
                yield from enums(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from enums(value, f"{where}/{i}")


def test_every_enum_is_a_declared_set() -> None:
    found = list(enums(document()))
    assert len(found) >= 8
    for where, values in found:
        assert [v for v in values if v is not None] in DECLARED, where


def test_every_dead_letter_reason_is_documented_wherever_a_reason_is() -> None:
    # The reasons a message's provenance, its deaths, a redrive's filter and the dead-letter
    # browse's query may name: maxlen (a bounded queue's) among them.
    doc = document()
    reasons = [(w, v) for w, v in enums(doc) if w.endswith("/reason")]
    assert len(reasons) >= 4
    for where, values in reasons:
        if "skipped_messages" in where:
            continue  # why a redrive left one where it is, not why it died
        assert [v for v in values if v is not None] == [r.value for r in Reason], where
        assert "maxlen" in values
    browse = doc["paths"]["/v2/queues/{queue}/dead_letters"]["get"]["parameters"]
    (reason,) = [p for p in browse if p["name"] == "reason"]
    assert "maxlen" in reason["schema"]["enum"]
