"""The project's default dead-letter queue (Solace's #DEAD_MSG_QUEUE): created with the first
policy that points at it, never a source itself, and where failed messages of such queues go."""

from __future__ import annotations

import pytest

from deadletter.domain import errors
from deadletter.domain.model import (
    DEFAULT_DEAD_LETTER_QUEUE as DEFAULT,
)
from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.provenance import Reason
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, fail, send, with_dlq


def to_default(max_claims: int = 1) -> QueueSettings:
    return QueueSettings(
        dead_letter=DeadLetterPolicy(target=DEFAULT, max_claims=max_claims),
        dead_letter_default=True,
    )


def test_a_queue_without_a_policy_creates_no_default_dlq(engine: Engine) -> None:
    engine.create_queue(P, "plain")
    with_dlq(engine, "named", "named-dlq")
    assert engine.find_queue(P, DEFAULT) is None


def test_the_default_dlq_is_created_with_the_first_policy_that_needs_it(engine: Engine) -> None:
    # Given a queue dead-lettering to the default DLQ, which did not exist,
    engine.create_queue(P, "orders", settings=to_default())
    assert engine.find_queue(P, DEFAULT) is not None
    # when a message is delivered once too often, it is in the default DLQ.
    send(engine, "orders", "poison")
    fail(engine, "orders", 1)
    engine.claim(P, "orders", limit=10)
    (m,) = engine.list_dead_letters(P, DEFAULT)
    assert m.provenance is not None and m.provenance.source_queue == "orders"
    assert m.provenance.reason is Reason.MAX_CLAIMS
    # A second source shares it.
    engine.create_queue(P, "payments", settings=to_default())
    assert {q.name for q in engine.dead_letter_sources(P, DEFAULT)} == {"orders", "payments"}


def test_the_default_dlq_is_per_project(engine: Engine) -> None:
    engine.create_queue(P, "orders", settings=to_default())
    assert engine.find_queue("other", DEFAULT) is None


def test_an_operator_may_create_the_default_dlq_first_with_its_own_settings(
    engine: Engine,
) -> None:
    engine.create_queue(P, DEFAULT, settings=QueueSettings(default_ttl=7200))
    engine.create_queue(P, "orders", settings=to_default())
    assert engine.get_queue(P, DEFAULT).settings.default_ttl == 7200


def test_the_default_dlq_has_no_dlq_of_its_own(engine: Engine) -> None:
    engine.create_queue(P, "other")
    with pytest.raises(errors.DeadLetterChainRefused, match="default dead-letter queue"):
        engine.create_queue(
            P, DEFAULT, settings=QueueSettings(dead_letter=DeadLetterPolicy("other", max_claims=1))
        )
    engine.create_queue(P, "orders", settings=to_default())
    with pytest.raises(errors.DeadLetterChainRefused):
        engine.update_queue(P, DEFAULT, settings=to_default())


def test_a_refused_policy_leaves_no_default_dlq_behind(engine: Engine) -> None:
    bad = to_default().with_changes(default_ttl=10, max_ttl=5)
    with pytest.raises(errors.InvalidInput):
        engine.create_queue(P, "orders", settings=bad)
    assert engine.find_queue(P, DEFAULT) is None
