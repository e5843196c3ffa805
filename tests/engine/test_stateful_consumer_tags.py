"""Random sequences of operations by the untagged consumers and two consumer tags of one queue,
against a small reference model.

Conservation per group: after every step, every message ever sent is, for each group (the
untagged consumers and each tag), exactly one of ready, claimed, delayed (given back with a
delay), acknowledged, dead-lettered or expired; the engine's counts of each agree with the
model, the DLQ holds each group's dead letters under its tag, and a message is in its queue
exactly while some group still needs it; and the DLQ holds at most one dead letter of a
message for each group (the race of claims and sweeps is tests/engine/test_dead_letter_once.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from deadletter.clock import ManualClock
from deadletter.domain.model import DeadLetterFilter, NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store

P = "p"
SRC, DLQ = "src", "dlq"
MAX_CLAIMS = 2
GROUPS: tuple[str | None, ...] = (None, "a", "b")  # None: the untagged consumers
FINAL = ("acked", "dead")


@dataclass
class Delivery:
    """One group's state of one message."""

    visible: float
    claim: str | None = None
    claim_until: float = 0.0
    count: int = 0
    final: str | None = None  # acked | dead


@dataclass
class Msg:
    body: str
    seq: int
    expires: float
    groups: dict[str | None, Delivery] = field(default_factory=dict)


def run_machine(store: Store) -> None:
    class Machine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.clock = ManualClock()
            self.engine = Engine(store, self.clock)
            self.engine.wipe()
            self.engine.create_queue(P, DLQ)
            policy = DeadLetterPolicy(DLQ, MAX_CLAIMS, message_ttl=1_000_000)
            self.engine.create_queue(P, SRC, settings=QueueSettings(dead_letter=policy))
            for tag in GROUPS[1:]:
                assert tag is not None
                self.engine.create_tag(P, SRC, name=tag)
            self.msgs: dict[str, Msg] = {}
            self.ids: dict[str, str] = {}
            self.sent = 0

        @property
        def now(self) -> float:
            return self.clock.now()

        def alive(self, group: str | None) -> list[Msg]:
            """Unexpired messages the group is not done with, in queue order."""
            return sorted(
                (
                    m
                    for m in self.msgs.values()
                    if m.expires > self.now and m.groups[group].final is None
                ),
                key=lambda m: m.seq,
            )

        def held(self, group: str | None) -> list[Msg]:
            return [m for m in self.alive(group) if m.groups[group].claim_until > self.now]

        def give_back(self, m: Msg, group: str | None, delay: int) -> None:
            d = m.groups[group]
            if d.count >= MAX_CLAIMS:
                d.final = "dead"
            else:
                d.claim, d.claim_until, d.visible = None, 0.0, self.now + delay

        @rule(n=st.integers(1, 3), ttl=st.sampled_from([30, 100, 1000]))
        def send(self, n: int, ttl: int) -> None:
            bodies = [f"m{self.sent + i}" for i in range(n)]
            self.sent += n
            stored = self.engine.send(
                P, SRC, messages=[NewMessage(body=b.encode(), ttl=ttl) for b in bodies]
            )
            for b, m in zip(bodies, stored, strict=True):
                self.ids[b] = m.id
                self.msgs[b] = Msg(
                    b, m.seq, self.now + ttl, {g: Delivery(self.now) for g in GROUPS}
                )

        @rule(
            group=st.sampled_from(GROUPS),
            limit=st.integers(1, 3),
            ttl=st.sampled_from([10, 50]),
        )
        def claim(self, group: str | None, limit: int, ttl: int) -> None:
            got = self.engine.claim(P, SRC, limit=limit, ttl=ttl, tag=group)
            expected: list[str] = []
            for m in self.alive(group):
                d = m.groups[group]
                if len(expected) == limit:
                    break
                if d.visible > self.now or d.claim_until > self.now:
                    continue
                if d.count >= MAX_CLAIMS:
                    d.final = "dead"
                    continue
                d.count += 1
                d.claim, d.claim_until, d.visible = got.id, self.now + ttl, self.now + ttl
                # Every group's claims keep the message alive, for every group.
                m.expires = max(m.expires, self.now + ttl)
                expected.append(m.body)
            assert [x.body.decode() for x in got.messages] == expected, group

        @precondition(lambda self: any(self.held(g) for g in GROUPS))
        @rule(data=st.data())
        def ack(self, data: st.DataObject) -> None:
            group = data.draw(st.sampled_from([g for g in GROUPS if self.held(g)]))
            m = data.draw(st.sampled_from(self.held(group)))
            d = m.groups[group]
            assert self.engine.delete_message(
                P, SRC, message_id=self.ids[m.body], claim_id=d.claim, tag=group
            )
            d.final = "acked"

        @precondition(lambda self: any(self.held(g) for g in GROUPS))
        @rule(data=st.data(), delay=st.sampled_from([0, 20]))
        def nack(self, data: st.DataObject, delay: int) -> None:
            group = data.draw(st.sampled_from([g for g in GROUPS if self.held(g)]))
            m = data.draw(st.sampled_from(self.held(group)))
            claim_id = m.groups[group].claim
            assert claim_id is not None
            self.engine.release_message(
                P, SRC, message_id=self.ids[m.body], claim_id=claim_id, delay=delay, tag=group
            )
            self.give_back(m, group, delay)

        @precondition(lambda self: any(self.held(g) for g in GROUPS))
        @rule(data=st.data())
        def reject(self, data: st.DataObject) -> None:
            group = data.draw(st.sampled_from([g for g in GROUPS if self.held(g)]))
            m = data.draw(st.sampled_from(self.held(group)))
            claim_id = m.groups[group].claim
            assert claim_id is not None
            self.engine.dead_letter(P, SRC, held=[(self.ids[m.body], claim_id)], tag=group)
            m.groups[group].final = "dead"

        @rule(seconds=st.sampled_from([5, 30, 120]))
        def advance_and_sweep(self, seconds: int) -> None:
            self.clock.advance(seconds)
            self.engine.sweep_expired()
            # Every group's last allowed claims that lapsed leave for the DLQ, each for its group.
            for group in GROUPS:
                for m in self.alive(group):
                    d = m.groups[group]
                    if d.claim and d.count >= MAX_CLAIMS and d.claim_until <= self.now:
                        d.final = "dead"

        def states(self, group: str | None) -> dict[str, int]:
            out = dict.fromkeys(("ready", "claimed", "delayed", "acked", "dead", "expired"), 0)
            for m in self.msgs.values():
                d = m.groups[group]
                if d.final is not None:
                    out[d.final] += 1
                elif m.expires <= self.now:
                    out["expired"] += 1
                elif d.claim_until > self.now:
                    out["claimed"] += 1
                elif d.visible > self.now:
                    out["delayed"] += 1
                else:
                    out["ready"] += 1
            return out

        @invariant()
        def each_group_holds_each_message_in_exactly_one_state(self) -> None:
            for group in GROUPS:
                s = self.states(group)
                assert sum(s.values()) == self.sent
                if group is None:
                    stats = self.engine.stats(P, SRC)
                    seen = {
                        "ready": stats.free,
                        "claimed": stats.claimed,
                        "delayed": stats.delayed,
                        "acked": stats.acknowledged,
                    }
                else:
                    counts = self.engine.get_tag(P, SRC, name=group).counts
                    seen = {
                        "ready": counts.ready,
                        "claimed": counts.claimed,
                        "acked": counts.acknowledged,
                        "dead": counts.dead_lettered,
                    }
                    # The tag counts ready what is due again now and delayed what is not yet.
                    seen["delayed"] = s["delayed"]
                assert seen == {k: s[k] for k in seen}, group
                dead = self.engine.list_dead_letters(
                    P, DLQ, where=DeadLetterFilter(source_tag=group), limit=1000
                )
                if group is None:
                    dead = [x for x in dead if x.provenance and x.provenance.source_tag is None]
                assert len(dead) == s["dead"], group

        @invariant()
        def at_most_one_dead_letter_per_message_and_group(self) -> None:
            dead = self.engine.list_dead_letters(P, DLQ, where=DeadLetterFilter(), limit=1000)
            pairs = Counter(
                (x.body, x.provenance.source_tag if x.provenance else None) for x in dead
            )
            assert [pair for pair, n in pairs.items() if n > 1] == []

        @invariant()
        def a_message_stays_while_some_group_needs_it(self) -> None:
            needed = sorted(
                m.body
                for m in self.msgs.values()
                if m.expires > self.now and any(d.final is None for d in m.groups.values())
            )
            present = self.engine.get_messages(P, SRC, ids=list(self.ids.values()))
            assert sorted(x.body.decode() for x in present) == needed

    run = Machine.TestCase
    run.settings = settings(
        max_examples=25,
        stateful_step_count=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    run().runTest()


@pytest.mark.slow
def test_conservation_of_messages_per_tag(store_url: str) -> None:
    store = open_store(store_url)
    try:
        run_machine(store)
    finally:
        store.close()
