"""The no-chain and no-cycle rules over every route: each kind of route (the queue's DLQ, a
reason's route, a tag's own DLQ) against each way to break them, generated as a matrix, so a
new kind of route is checked the day it is added to `KINDS`."""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

import pytest

from deadletter.domain import errors, routing
from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import (
    DeadLetterPolicy,
    DeadLetterRoute,
    GroupPolicy,
    RedriveAllow,
    RedrivePermission,
)
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, set_tag_policy

pytestmark = pytest.mark.one_store


def _queue(engine: Engine, source: str, target: str) -> None:
    engine.change_settings(
        P, source, change=lambda q: q.settings.with_changes(dead_letter=DeadLetterPolicy(target, 3))
    )


def _route(engine: Engine, source: str, target: str) -> None:
    fallback = f"{source}-fallback"
    if engine.find_queue(P, fallback) is None:
        engine.create_queue(P, fallback)
    engine.change_settings(
        P,
        source,
        change=lambda q: q.settings.with_changes(
            dead_letter=DeadLetterPolicy(fallback, 3),
            dead_letter_routes={"rejected": DeadLetterRoute(target)},
        ),
    )


def _tag(engine: Engine, source: str, target: str) -> None:
    if "t" not in engine.get_queue(P, source).settings.consumer_tags:
        engine.create_tag(P, source, name="t")
    set_tag_policy(engine, source, "t", GroupPolicy(max_claims=2, dead_letter_queue=target))


# Each kind of route: how queue `source` comes to name `target` as a DLQ that way.
KINDS: dict[str, Callable[[Engine, str, str], None]] = {
    "queue": _queue,
    "route": _route,
    "tag": _tag,
}


def _ensure(engine: Engine, *names: str) -> None:
    for name in names:
        if engine.find_queue(P, name) is None:
            engine.create_queue(P, name)


def _refused(engine: Engine, kind: str, source: str, target: str, error: type[Exception]) -> None:
    before = engine.get_queue(P, source).settings
    with pytest.raises(error):
        KINDS[kind](engine, source, target)
    after = engine.get_queue(P, source).settings
    assert routing.targets(after) == routing.targets(before), "nothing is written"


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_target_is_refused(engine: Engine, kind: str) -> None:
    _ensure(engine, "src")
    _refused(engine, kind, "src", "missing", errors.DeadLetterTargetMissing)


@pytest.mark.parametrize("kind", KINDS)
def test_a_queue_is_not_its_own_dlq(engine: Engine, kind: str) -> None:
    _ensure(engine, "src")
    _refused(engine, kind, "src", "src", errors.DeadLetterChainRefused)


@pytest.mark.parametrize(("kind", "targets_kind"), list(product(KINDS, KINDS)))
def test_a_target_with_a_dlq_of_its_own_is_refused(
    engine: Engine, kind: str, targets_kind: str
) -> None:
    # Given dlq, which names dlq2 by a route of one kind,
    _ensure(engine, "src", "dlq", "dlq2")
    KINDS[targets_kind](engine, "dlq", "dlq2")
    # src cannot name dlq by any kind (no chains).
    _refused(engine, kind, "src", "dlq", errors.DeadLetterChainRefused)


@pytest.mark.parametrize(("kind", "sources_kind"), list(product(KINDS, KINDS)))
def test_a_dlq_cannot_name_a_dlq_of_its_own(engine: Engine, kind: str, sources_kind: str) -> None:
    # Given other, which names src as a DLQ by a route of one kind,
    _ensure(engine, "other", "src", "dlq")
    KINDS[sources_kind](engine, "other", "src")
    # src cannot name a DLQ of its own by any kind, nor close a cycle back to other.
    _refused(engine, kind, "src", "dlq", errors.DeadLetterChainRefused)
    _refused(engine, kind, "src", "other", errors.DeadLetterChainRefused)


@pytest.mark.parametrize("kind", KINDS)
def test_each_target_s_redrive_allow_policy_is_respected(engine: Engine, kind: str) -> None:
    _ensure(engine, "src")
    for name, allow in (
        ("closed", RedriveAllow(RedrivePermission.DENY_ALL)),
        ("others-only", RedriveAllow(RedrivePermission.BY_QUEUE, ("someone",))),
    ):
        engine.create_queue(P, name, settings=QueueSettings(redrive_allow=allow))
        _refused(engine, kind, "src", name, errors.RedriveNotAllowed)
    engine.create_queue(
        P,
        "mine",
        settings=QueueSettings(redrive_allow=RedriveAllow(RedrivePermission.BY_QUEUE, ("src",))),
    )
    KINDS[kind](engine, "src", "mine")
    assert "mine" in routing.active_targets(engine.get_queue(P, "src").settings)


@pytest.mark.parametrize("kind", KINDS)
def test_the_default_dlq_names_no_dlq(engine: Engine, kind: str) -> None:
    _ensure(engine, "_dead_msg_queue", "dlq")
    _refused(engine, kind, "_dead_msg_queue", "dlq", errors.DeadLetterChainRefused)


@pytest.mark.parametrize("kind", KINDS)
def test_a_valid_route_of_each_kind_is_kept_and_its_target_is_in_use(
    engine: Engine, kind: str
) -> None:
    _ensure(engine, "src", "dlq")
    KINDS[kind](engine, "src", "dlq")
    assert [q.name for q in engine.dead_letter_sources(P, "dlq")] == ["src"]
    with pytest.raises(errors.DeadLetterQueueInUse):
        engine.delete_queue(P, "dlq")
    with pytest.raises(errors.DeadLetterQueueInUse):
        engine.purge(P, "dlq")
