"""Random sequences of operations against the engine and a small reference model.

After every step, every message ever sent is in exactly one place: its queue, the DLQ,
acknowledged, or expired and dropped (counted) - or expired and awaiting the sweep, which no
read returns - and each live message has the claim count the model expects; the stats of
both queues count their free, claimed and delayed messages as the model does, whether or not
a sweep has passed since claims lapsed and delays ended.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from deadletter.clock import ManualClock
from deadletter.domain.model import MAX_TTL, ListQuery, NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.redrive import TaskStatus
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store

P = "p"
SRC, DLQ = "src", "dlq"
MAX_CLAIMS = 2
DEFAULT_TTL = 3600  # both queues' default message TTL
DLQ_RETENTION = MAX_TTL  # the DLQ's max TTL, created with the defaults: how long it keeps one


@dataclass
class Msg:
    body: str
    seq: int  # the model's order within its queue
    queue: str = SRC
    expires: float = 0.0
    enqueued: float = 0.0
    visible: float = 0.0
    claim: str | None = None
    claim_until: float = 0.0
    count: int = 0
    eligible: bool = True
    where: str = "queue"  # queue | acked | dropped


@dataclass
class Model:
    now: float
    msgs: dict[str, Msg] = field(default_factory=dict)  # by body: bodies are unique
    next_seq: int = 0
    dead: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    # Past a limit but not eligible for the DLQ, by reason.
    lost: dict[str, int] = field(default_factory=dict)

    def seq(self) -> int:
        self.next_seq += 1
        return self.next_seq

    def alive(self, queue: str) -> list[Msg]:
        return sorted(
            (m for m in self.msgs.values() if m.where == "queue" and m.queue == queue),
            key=lambda m: m.seq,
        )

    def past_limit(self, m: Msg, reason: str) -> None:
        """To the DLQ, or dropped (and counted) when not eligible."""
        if m.eligible:
            self.move(m, reason)
        else:
            m.where = "dropped"
            self.lost[reason] = self.lost.get(reason, 0) + 1

    def give_back(self, m: Msg, delay: int) -> None:
        """A nack: at the limit the message leaves at once."""
        if m.count >= MAX_CLAIMS:
            self.past_limit(m, "max_claims")
        else:
            m.claim, m.visible = None, self.now + delay

    def move(self, m: Msg, reason: str) -> None:
        """A dead letter stays for the DLQ's retention, from its enqueue time (its clock kept),
        or from the move when it expired (its time in the source spent)."""
        self.dead[reason] = self.dead.get(reason, 0) + 1
        m.queue, m.claim, m.visible, m.seq = DLQ, None, self.now, self.seq()
        m.expires = (self.now if reason == "expired" else m.enqueued) + DLQ_RETENTION


def run_machine(store: Store) -> None:
    class Machine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.clock = ManualClock()
            self.engine = Engine(store, self.clock)
            self.engine.wipe()
            self.engine.create_queue(P, DLQ)
            policy = DeadLetterPolicy(DLQ, MAX_CLAIMS, on_expiry=True)
            self.engine.create_queue(P, SRC, settings=QueueSettings(dead_letter=policy))
            self.model = Model(self.clock.now())
            self.ids: dict[str, str] = {}  # body -> the engine's current message id
            self.sent = 0

        # Producers and consumers

        @rule(n=st.integers(1, 3), ttl=st.sampled_from([30, 100, 1000]), eligible=st.booleans())
        def send(self, n: int, ttl: int, eligible: bool) -> None:
            bodies = [f"m{self.sent + i}" for i in range(n)]
            self.sent += n
            stored = self.engine.send(
                P,
                SRC,
                messages=[
                    NewMessage(body=b.encode(), ttl=ttl, dead_letter_eligible=eligible)
                    for b in bodies
                ],
            )
            now = self.model.now
            for b, m in zip(bodies, stored, strict=True):
                self.ids[b] = m.id
                self.model.msgs[b] = Msg(
                    b,
                    self.model.seq(),
                    expires=now + ttl,
                    enqueued=now,
                    visible=now,
                    eligible=eligible,
                )

        @rule(limit=st.integers(1, 3), ttl=st.sampled_from([10, 50]))
        def claim(self, limit: int, ttl: int) -> None:
            got = self.engine.claim(P, SRC, limit=limit, ttl=ttl)
            now = self.model.now
            expected: list[str] = []
            for m in self.model.alive(SRC):
                if len(expected) == limit:
                    break
                if m.expires <= now or m.visible > now:
                    continue
                if m.count >= MAX_CLAIMS:
                    self.model.past_limit(m, "max_claims")
                    continue
                m.count += 1
                m.claim, m.claim_until, m.visible = got.id, now + ttl, now + ttl
                m.expires = max(m.expires, now + ttl)
                expected.append(m.body)
            assert [x.body.decode() for x in got.messages] == expected

        def _held(self) -> list[Msg]:
            now = self.model.now
            return [
                m
                for m in self.model.alive(SRC)
                if m.claim and m.claim_until > now and m.expires > now
            ]

        @precondition(lambda self: self._held())
        @rule(data=st.data())
        def ack(self, data: st.DataObject) -> None:
            m = data.draw(st.sampled_from(self._held()))
            assert self.engine.delete_message(P, SRC, message_id=self.ids[m.body], claim_id=m.claim)
            m.where = "acked"

        @precondition(lambda self: self._held())
        @rule(data=st.data(), delay=st.sampled_from([0, 20]))
        def nack(self, data: st.DataObject, delay: int) -> None:
            m = data.draw(st.sampled_from(self._held()))
            assert m.claim is not None
            self.engine.release_message(
                P, SRC, message_id=self.ids[m.body], claim_id=m.claim, delay=delay
            )
            self.model.give_back(m, delay)

        @precondition(lambda self: self._held())
        @rule(data=st.data())
        def release_claim(self, data: st.DataObject) -> None:
            # In message order, not by id: claim ids are random, the draw must not depend on them.
            held = list(dict.fromkeys(m.claim for m in self._held() if m.claim))
            claim_id = data.draw(st.sampled_from(held))
            self.engine.release_claim(P, SRC, claim_id=claim_id)
            for m in self.model.alive(SRC):
                if m.claim == claim_id:
                    self.model.give_back(m, 0)

        @precondition(lambda self: self._held())
        @rule(data=st.data())
        def reject(self, data: st.DataObject) -> None:
            m = data.draw(st.sampled_from(self._held()))
            assert m.claim is not None
            self.engine.dead_letter(
                P, SRC, held=[(self.ids[m.body], m.claim)], description="bad input"
            )
            self.model.move(m, "rejected")

        # Time, expiry, redrive

        @rule(seconds=st.sampled_from([5, 30]))
        def advance(self, seconds: int) -> None:
            """Time passes between sweeps: claims lapse and delays end unnoticed."""
            self.clock.advance(seconds)
            self.model.now = self.clock.now()

        @rule(seconds=st.sampled_from([5, 30, 120]))
        def advance_and_sweep(self, seconds: int) -> None:
            self.clock.advance(seconds)
            self.model.now = now = self.clock.now()
            self.engine.sweep_expired()
            for m in sorted(self.model.msgs.values(), key=lambda x: (x.expires, x.seq)):
                if m.where != "queue" or m.expires > now:
                    continue
                if m.queue == SRC and m.eligible:
                    self.model.move(m, "expired")
                else:
                    m.where = "dropped"
                    self.model.dropped[m.queue] = self.model.dropped.get(m.queue, 0) + 1
                    if m.queue == SRC:
                        self.model.lost["expired"] = self.model.lost.get("expired", 0) + 1
            # Then the last claims that lapsed unacknowledged leave for the DLQ.
            lapsed = [
                m
                for m in self.model.alive(SRC)
                if m.claim and m.count >= MAX_CLAIMS and m.claim_until <= now and m.expires > now
            ]
            for m in sorted(lapsed, key=lambda x: (x.claim_until, x.seq)):
                self.model.past_limit(m, "max_claims")

        @precondition(lambda self: self.model.alive(DLQ))
        @rule()
        def redrive(self) -> None:
            task = self.engine.start_redrive(P, DLQ)
            while task.status is TaskStatus.RUNNING:
                task = self.engine.redrive_step(task.id, 2)
            assert task.status is TaskStatus.COMPLETED
            now = self.model.now
            moved = [m for m in self.model.alive(DLQ) if m.expires > now]
            assert task.moved == len(moved)
            for m in moved:
                m.queue, m.count, m.claim, m.visible = SRC, 0, None, now
                m.expires, m.enqueued, m.seq = now + DEFAULT_TTL, now, self.model.seq()
            # A redriven message is a new message: learn its id.
            listed = self.engine.list_messages(
                P, SRC, query=ListQuery(limit=1000, include_claimed=True, include_delayed=True)
            )
            for x in listed:
                self.ids[x.body.decode()] = x.id

        # The invariant

        @invariant()
        def every_message_is_in_exactly_one_place(self) -> None:
            now = self.model.now
            query = ListQuery(limit=1000, include_claimed=True, include_delayed=True)
            places: dict[str, str] = {}
            for queue in (SRC, DLQ):
                listed = self.engine.list_messages(P, queue, query=query)
                expected = [m for m in self.model.alive(queue) if m.expires > now]
                assert [x.body.decode() for x in listed] == [m.body for m in expected], queue
                for x, m in zip(listed, expected, strict=True):
                    assert x.claim_count == m.count, m.body
                    places[m.body] = queue
            for m in self.model.msgs.values():
                if m.where != "queue":
                    places.setdefault(m.body, m.where)
                elif m.expires <= now:
                    places.setdefault(m.body, "expired, awaiting the sweep")
            assert len(places) == self.sent == len(self.model.msgs)
            src, dlq = self.engine.stats(P, SRC), self.engine.stats(P, DLQ)
            assert src.acknowledged == sum(m.where == "acked" for m in self.model.msgs.values())
            assert src.dead_lettered == self.model.dead
            assert src.expired_dropped == self.model.dropped.get(SRC, 0)
            assert dlq.expired_dropped == self.model.dropped.get(DLQ, 0)
            assert src.dropped == self.model.lost
            for queue, stats in ((SRC, src), (DLQ, dlq)):
                live = [m for m in self.model.alive(queue) if m.expires > now]
                claimed = [m for m in live if m.claim and m.claim_until > now]
                delayed = [m for m in live if m.visible > now and m not in claimed]
                expected = (len(live) - len(claimed) - len(delayed), len(claimed), len(delayed))
                assert (stats.free, stats.claimed, stats.delayed) == expected, queue

    run = Machine.TestCase
    run.settings = settings(
        max_examples=60,
        stateful_step_count=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    run().runTest()


@pytest.mark.slow
def test_conservation_of_messages(store_url: str) -> None:
    store = open_store(store_url)
    try:
        run_machine(store)
    finally:
        store.close()
