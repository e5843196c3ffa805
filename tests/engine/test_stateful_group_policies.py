"""Random sequences of changes to the DLQs queues name (a queue's policy, its routes by
reason, its tags' own DLQs) and of deletions and re-creations of queues: after every step,
whatever the engine accepted keeps the seed's rules across every route: no queue names
itself, and no queue that some queue names as an active DLQ names one of its own."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from deadletter.clock import ManualClock
from deadletter.domain import errors, routing
from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import DeadLetterPolicy, DeadLetterRoute, GroupPolicy
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store

pytestmark = pytest.mark.one_store

P = "p"
QUEUES = ("q0", "q1", "q2", "q3")
queue_names = st.sampled_from(QUEUES)
reasons = st.sampled_from(("expired", "rejected", "max_claims"))


class Machine(RuleBasedStateMachine):
    store: Store  # set by the test

    def __init__(self) -> None:
        super().__init__()
        self.engine = Engine(self.store, ManualClock())
        self.engine.wipe()
        for name in QUEUES:
            self.engine.create_queue(P, name)

    def _try(self, change: Callable[[], object]) -> None:
        # Refused: nothing was written, which the invariant checks as well.
        with contextlib.suppress(errors.DeadletterError):
            change()

    def _change(self, source: str, change: Callable[[QueueSettings], QueueSettings]) -> None:
        self._try(
            lambda: self.engine.change_settings(P, source, change=lambda q: change(q.settings))
        )

    @rule(source=queue_names, dlq=queue_names)
    def set_policy(self, source: str, dlq: str) -> None:
        self._change(source, lambda s: s.with_changes(dead_letter=DeadLetterPolicy(dlq, 2)))

    @rule(source=queue_names, reason=reasons, dlq=queue_names)
    def set_route(self, source: str, reason: str, dlq: str) -> None:
        self._change(
            source,
            lambda s: s.with_changes(
                dead_letter_routes={**s.dead_letter_routes, reason: DeadLetterRoute(dlq)}
            ),
        )

    @rule(source=queue_names)
    def remove_policy_and_routes(self, source: str) -> None:
        self._change(source, lambda s: s.with_changes(dead_letter=None, dead_letter_routes={}))

    @rule(source=queue_names, dlq=queue_names)
    def set_tag_dlq(self, source: str, dlq: str) -> None:
        def change() -> None:
            if "t" not in self.engine.get_queue(P, source).settings.consumer_tags:
                self.engine.create_tag(P, source, name="t")
            self.engine.change_tag_policy(
                P,
                source,
                name="t",
                change=lambda _: GroupPolicy(max_claims=1, dead_letter_queue=dlq),
            )

        self._try(change)

    @rule(source=queue_names)
    def delete_tag(self, source: str) -> None:
        self._try(lambda: self.engine.delete_tag(P, source, name="t"))

    @rule(name=queue_names, force=st.booleans())
    def delete_and_recreate(self, name: str, force: bool) -> None:
        self._try(lambda: self.engine.delete_queue(P, name, force=force))
        if self.engine.find_queue(P, name) is None:
            self.engine.create_queue(P, name)

    @invariant()
    def no_chains_no_cycles(self) -> None:
        queues = {q.name: q for q in self.engine.list_queues(P, limit=100)}
        for name, queue in queues.items():
            for dlq in routing.active_targets(queue.settings):
                assert dlq != name, (name, queue.settings)
                assert dlq in queues, (name, dlq)
                assert not routing.active_targets(queues[dlq].settings), (name, dlq)


def test_the_rules_hold_across_every_route_whatever_the_changes(store_url: str) -> None:
    Machine.store = open_store(store_url)
    run = Machine.TestCase
    run.settings = settings(
        max_examples=40,
        stateful_step_count=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    try:
        run().runTest()
    finally:
        Machine.store.close()
