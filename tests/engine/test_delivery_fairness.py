"""Fair shares of the webhook sender, on every store, with the sender's production settings:
one project's backlog of notifications to slow subscribers does not hold back another
project's, and one subscription is notified as fast as its receiver answers."""

from __future__ import annotations

import json
import threading
import time

from deadletter.domain.model import NewMessage
from deadletter.engine.deliveries import Deliveries, DeliverySettings
from deadletter.engine.engine import Engine
from tests.support.receivers import WAIT, allow_local, receiving

# The bound docs/limits.md states: a quiet project's notification to a receiver that answers
# at once arrives within this many seconds of its post, p99, whatever another project owes.
QUIET_P99 = 1.0
SETTINGS = DeliverySettings(timeout=WAIT)  # what `deadletter serve` runs, but a long timeout


def post(engine: Engine, project: str, count: int) -> None:
    for start in range(0, count, 20):
        n = min(20, count - start)
        engine.send(project, "q", messages=[NewMessage(json.dumps(i).encode()) for i in range(n)])


def test_a_quiet_project_is_notified_within_the_bound_while_another_floods(
    engine: Engine,
) -> None:
    deliveries = Deliveries(engine, allow_local(engine), SETTINGS)
    held = threading.Event()
    latencies: list[float] = []
    with receiving(gate=held) as slow, receiving() as fast:
        # Given a project owing 1,000 notifications to ten subscribers that do not answer
        engine.create_queue("flood", "q")
        for i in range(10):
            engine.subscriptions.create(
                "flood", "q", subscriber=f"{slow.url}/{i}", ttl=600, options={}
            )
        post(engine, "flood", 100)
        engine.create_queue("quiet", "q")
        engine.subscriptions.create("quiet", "q", subscriber=fast.url, ttl=600, options={})
        deliveries.start()
        try:
            assert slow.wait_for(1)  # the flood is being sent, and holds its slots
            # when the quiet project posts, one message at a time
            for i in range(20):
                began = time.monotonic()
                post(engine, "quiet", 1)
                arrived = fast.wait_for(i + 1, timeout=QUIET_P99 * 5)
                latencies.append(time.monotonic() - began if arrived else float("inf"))
                if not arrived:
                    break
        finally:
            held.set()
            deliveries.stop()
    # then each of its notifications arrives within the bound
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    assert p99 < QUIET_P99, f"quiet project's p99 {p99:.3f} s: {latencies}"
    assert len(slow.posts) < 1000  # the flood was still owed when the quiet project was served


def test_one_subscription_is_notified_as_fast_as_its_receiver_answers(engine: Engine) -> None:
    deliveries = Deliveries(engine, allow_local(engine), SETTINGS)
    with receiving() as hook:
        engine.create_queue("p", "q")
        engine.subscriptions.create("p", "q", subscriber=hook.url, ttl=600, options={})
        deliveries.start()
        try:
            began = time.monotonic()
            post(engine, "p", 200)
            assert hook.wait_for(200)
            seconds = time.monotonic() - began
        finally:
            deliveries.stop()
    # 2 POSTs at a time, each starting as the one before is answered, not at the next tick
    # (0.5 s): 200 notifications took 50 s before; a floor of 40 per second leaves room for
    # a busy machine.
    assert 200 / seconds > 40, f"{200 / seconds:.1f} notifications per second"
