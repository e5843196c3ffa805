"""Queues: lifecycle, projects, settings validation, no chains, redrive-allow."""

from __future__ import annotations

import pytest

from deadletter.domain import errors
from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import DeadLetterPolicy, RedriveAllow, RedrivePermission
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, fail, send, with_dlq


def test_create_get_update_delete(engine: Engine) -> None:
    engine.create_queue(P, "orders", settings=QueueSettings(claim_ttl=45))
    assert engine.get_queue(P, "orders").settings.claim_ttl == 45
    engine.update_queue(P, "orders", settings=QueueSettings(claim_ttl=60))
    assert engine.get_queue(P, "orders").settings.claim_ttl == 60
    with pytest.raises(errors.QueueAlreadyExists):
        engine.create_queue(P, "orders")
    assert engine.delete_queue(P, "orders")
    with pytest.raises(errors.QueueNotFound):
        engine.get_queue(P, "orders")
    assert not engine.delete_queue(P, "orders")


def test_projects_scope_queues(engine: Engine) -> None:
    engine.create_queue("a", "orders")
    engine.create_queue("b", "orders")
    from deadletter.domain.model import NewMessage

    engine.send("a", "orders", messages=[NewMessage(body=b"for a")])
    assert engine.claim("b", "orders", limit=10).messages == ()
    assert [m.body for m in engine.claim("a", "orders", limit=10).messages] == [b"for a"]
    with pytest.raises(errors.QueueNotFound):
        engine.get_queue("c", "orders")


def test_list_queues_pages_by_name_and_prefix(engine: Engine) -> None:
    for name in ("b", "a-2", "a-1", "c"):
        engine.create_queue(P, name)
    assert [q.name for q in engine.list_queues(P, limit=2)] == ["a-1", "a-2"]
    assert [q.name for q in engine.list_queues(P, after="a-2", limit=10)] == ["b", "c"]
    assert [q.name for q in engine.list_queues(P, prefix="a-")] == ["a-1", "a-2"]


@pytest.mark.parametrize(
    "settings",
    [
        QueueSettings(default_ttl=0),
        QueueSettings(default_ttl=7200, max_ttl=3600),
        QueueSettings(default_delay=901),
        QueueSettings(claim_ttl=-1),
        QueueSettings(max_message_size=0),
        QueueSettings(redrive_allow=RedriveAllow(RedrivePermission.BY_QUEUE, ())),
        QueueSettings(
            redrive_allow=RedriveAllow(
                RedrivePermission.BY_QUEUE, tuple(f"q{i}" for i in range(11))
            )
        ),
        QueueSettings(redrive_allow=RedriveAllow(RedrivePermission.ALLOW_ALL, ("q",))),
    ],
)
def test_out_of_range_settings_are_refused(engine: Engine, settings: QueueSettings) -> None:
    with pytest.raises(errors.InvalidInput):
        engine.create_queue(P, "orders", settings=settings)
    with pytest.raises(errors.QueueNotFound):
        engine.get_queue(P, "orders")


@pytest.mark.parametrize(
    ("policy", "error"),
    [
        (DeadLetterPolicy("missing", 3), errors.DeadLetterTargetMissing),
        (DeadLetterPolicy("orders", 3), errors.DeadLetterChainRefused),
        (DeadLetterPolicy("dlq", 0), errors.InvalidInput),
        (DeadLetterPolicy("dlq", 1001), errors.InvalidInput),
        (DeadLetterPolicy("dlq", 3, message_ttl=59), errors.InvalidInput),
    ],
)
def test_bad_policies_are_refused(
    engine: Engine, policy: DeadLetterPolicy, error: type[Exception]
) -> None:
    engine.create_queue(P, "dlq")
    with pytest.raises(error):
        engine.create_queue(P, "orders", settings=QueueSettings(dead_letter=policy))


def test_no_chains_and_no_cycles(engine: Engine) -> None:
    with_dlq(engine, "orders", "dlq")
    # The DLQ cannot get a policy of its own...
    engine.create_queue(P, "other")
    with pytest.raises(errors.DeadLetterChainRefused):
        engine.update_queue(
            P, "dlq", settings=QueueSettings(dead_letter=DeadLetterPolicy("other", 3))
        )
    # ... and a queue with a policy cannot become someone's DLQ.
    with pytest.raises(errors.DeadLetterChainRefused):
        engine.update_queue(
            P, "other", settings=QueueSettings(dead_letter=DeadLetterPolicy("orders", 3))
        )


def test_redrive_allow_is_checked_when_a_source_sets_its_policy(engine: Engine) -> None:
    engine.create_queue(
        P, "closed", settings=QueueSettings(redrive_allow=RedriveAllow(RedrivePermission.DENY_ALL))
    )
    engine.create_queue(
        P,
        "picky",
        settings=QueueSettings(redrive_allow=RedriveAllow(RedrivePermission.BY_QUEUE, ("a",))),
    )
    with pytest.raises(errors.RedriveNotAllowed):
        engine.create_queue(
            P, "x", settings=QueueSettings(dead_letter=DeadLetterPolicy("closed", 3))
        )
    with pytest.raises(errors.RedriveNotAllowed):
        engine.create_queue(
            P, "b", settings=QueueSettings(dead_letter=DeadLetterPolicy("picky", 3))
        )
    engine.create_queue(P, "a", settings=QueueSettings(dead_letter=DeadLetterPolicy("picky", 3)))


def test_deleting_a_dlq_deactivates_its_sources_and_keeps_their_messages(engine: Engine) -> None:
    with_dlq(engine, max_claims=1)
    send(engine, "orders", "m")
    assert engine.stats(P, "orders").policy_active is True
    engine.delete_queue(P, "orders-dlq", force=True)
    policy = engine.get_queue(P, "orders").settings.dead_letter
    assert policy is not None and policy.active is False
    assert engine.stats(P, "orders").policy_active is False
    # No DLQ any more: the message goes on being delivered instead of being dropped.
    fail(engine, "orders", 3)
    assert [m.body for m in engine.claim(P, "orders", limit=10).messages] == [b"m"]
    assert engine.stats(P, "orders").dead_lettered == {}


def test_a_dlq_in_use_is_deleted_or_purged_only_by_force(engine: Engine) -> None:
    # Given orders and billing dead-lettering into orders-dlq, which holds a dead letter
    with_dlq(engine, max_claims=1)
    engine.create_queue(
        P, "billing", settings=QueueSettings(dead_letter=DeadLetterPolicy("orders-dlq", 2))
    )
    send(engine, "orders", "poison")
    fail(engine, "orders", 1)
    assert engine.stats(P, "orders-dlq").total == 1
    # When it is deleted or purged without force, each is refused naming both sources
    for attempt in (
        lambda: engine.delete_queue(P, "orders-dlq"),
        lambda: engine.purge(P, "orders-dlq"),
    ):
        with pytest.raises(errors.DeadLetterQueueInUse) as refused:
            attempt()
        assert refused.value.sources == ("billing", "orders")
        assert "'billing', 'orders'" in refused.value.message
    # and nothing changed
    assert engine.stats(P, "orders-dlq").total == 1
    assert engine.stats(P, "orders").policy_active is True
    # With force, both go ahead
    assert engine.purge(P, "orders-dlq", force=True) == 1
    assert engine.delete_queue(P, "orders-dlq", force=True)
    assert engine.stats(P, "billing").policy_active is False


def test_a_dlq_whose_sources_are_gone_or_inactive_needs_no_force(engine: Engine) -> None:
    with_dlq(engine)
    engine.delete_queue(P, "orders")
    assert engine.purge(P, "orders-dlq") == 0
    assert engine.delete_queue(P, "orders-dlq")
