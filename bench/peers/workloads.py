"""The four workloads (steady, poison, redrive, latency), each bounded in count and time."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.peers.drivers import Driver, Msg, Session
from bench.peers.stats import (
    key_of,
    make_body,
    parse_body,
    percentile,
    poison_keys,
    verify_poison,
)


@dataclass
class Params:
    n: int = 20_000
    redrive_n: int = 10_000
    producers: int = 4
    consumers: int = 4
    poison_ratio: float = 0.02
    deliveries: int = 3
    rate: float = 50.0
    duration: float = 10.0
    timeout: float = 600.0  # per workload run


class Workers:
    """Threads that each hold one session; the first error stops them all and is re-raised."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []

    def spawn(self, count: int, body: Callable[[Session], None]) -> None:
        def run() -> None:
            try:
                s = self.driver.session()
            except BaseException as exc:
                self.errors.append(exc)
                self.stop.set()
                return
            try:
                body(s)
            except BaseException as exc:
                self.errors.append(exc)
                self.stop.set()
            finally:
                s.close()

        for _ in range(count):
            t = threading.Thread(target=run, daemon=True)
            t.start()
            self.threads.append(t)

    def join(self, deadline: float) -> None:
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        self.stop.set()
        for t in self.threads:
            t.join(30)
        if self.errors:
            raise self.errors[0]


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]   {msg}", file=sys.stderr, flush=True)


def _name(prefix: str) -> str:
    return f"bench-{prefix}-{uuid.uuid4().hex[:8]}"


def _produce(
    w: Workers,
    driver: Driver,
    queue: str,
    bodies: list[str],
    count: int,
    on_sent: Callable[[list[str], list[str]], None] | None = None,
) -> dict[str, float]:
    """Spawn `count` producers sending `bodies` in batches; fills in done["t"] when all sent."""
    batches = [bodies[i : i + driver.batch] for i in range(0, len(bodies), driver.batch)]
    lock = threading.Lock()
    state = {"next": 0, "sent": 0, "left": count}
    done: dict[str, float] = {}

    def producer(s: Session) -> None:
        while not w.stop.is_set():
            with lock:
                i = state["next"]
                state["next"] += 1
            if i >= len(batches):
                break
            ids = s.send(queue, batches[i])
            if on_sent:
                on_sent(batches[i], ids)
            with lock:
                state["sent"] += len(batches[i])
        with lock:
            state["left"] -= 1
            if state["left"] == 0:
                done["t"] = time.monotonic()
                done["sent"] = state["sent"]

    w.spawn(count, producer)
    return done


def steady(driver: Driver, p: Params) -> dict[str, Any]:
    """W1: produce and consume N messages concurrently."""
    q = _name("w1")
    driver.create_queue(q)
    try:
        bodies = [make_body(key_of(i), False) for i in range(p.n)]
        w = Workers(driver)
        lock = threading.Lock()
        got = {"consumed": 0, "during": 0}
        marks: dict[str, float] = {}
        t0 = time.monotonic()
        deadline = t0 + p.timeout
        produced = _produce(w, driver, q, bodies, p.producers)

        def consumer(s: Session) -> None:
            while not w.stop.is_set() and time.monotonic() < deadline:
                msgs = s.receive(q, driver.batch)
                if not msgs:
                    continue
                marks.setdefault("first", time.monotonic())
                s.ack(q, msgs)
                with lock:
                    got["consumed"] += len(msgs)
                    if "t" not in produced:  # still producing: `consume_during` counts it
                        got["during"] = got["consumed"]
                    if got["consumed"] >= p.n:
                        marks["end"] = time.monotonic()
                        w.stop.set()

        w.spawn(p.consumers, consumer)
        while not w.stop.wait(10) and time.monotonic() < deadline:
            progress(f"W1 {produced.get('sent', '...')} sent, {got['consumed']}/{p.n} consumed")
        w.join(deadline)
        end = marks.get("end", time.monotonic())
        t_prod = produced.get("t", end)
        return {
            "n": p.n,
            "consumed": got["consumed"],
            "complete": got["consumed"] >= p.n,
            "produce": produced.get("sent", 0) / max(t_prod - t0, 1e-9),
            "consume": got["consumed"] / max(end - marks.get("first", t0), 1e-9),
            "e2e": got["consumed"] / max(end - t0, 1e-9),
            "seconds": end - t0,
            # The consumers' rate while the producers still send, and after: where producers
            # run ahead, the second is the consumers' alone (docs/benchmarks.md).
            "consume_during": got["during"] / max(t_prod - t0, 1e-9),
            "consume_after": (got["consumed"] - got["during"]) / max(end - t_prod, 1e-9),
        }
    finally:
        driver.delete_queue(q)


def poison(driver: Driver, p: Params) -> dict[str, Any]:
    """W2: like W1 with poison messages the consumer always returns; verified exactly."""
    q, dlq = _name("w2"), _name("w2-dlq")
    driver.create_queue(q, dlq, p.deliveries)
    try:
        bad = poison_keys(p.n, p.poison_ratio)
        sent = {key_of(i): key_of(i) in bad for i in range(p.n)}
        bodies = [make_body(k, is_poison) for k, is_poison in sent.items()]
        healthy_total = p.n - len(bad)
        w = Workers(driver)
        lock = threading.Lock()
        acked: list[str] = []
        poison_ids: list[str] = []
        state = {"healthy": 0, "releases": 0}

        def on_sent(batch: list[str], ids: list[str]) -> None:
            picked = [i for b, i in zip(batch, ids, strict=False) if parse_body(b)[1]]
            with lock:
                poison_ids.extend(picked)

        t0 = time.monotonic()
        deadline = t0 + p.timeout
        _produce(w, driver, q, bodies, p.producers, on_sent)

        def consumer(s: Session) -> None:
            while not w.stop.is_set() and time.monotonic() < deadline:
                msgs = s.receive(q, driver.batch)
                if not msgs:
                    continue
                good = [m for m in msgs if not m.poison]
                evil: list[Msg] = [m for m in msgs if m.poison]
                if good:
                    s.ack(q, good)
                if evil:
                    s.release(q, evil)
                with lock:
                    acked.extend(m.key for m in good)
                    state["healthy"] += len(good)
                    state["releases"] += len(evil)

        w.spawn(p.consumers, consumer)
        # Drained when every healthy message is acknowledged, the source is empty and the DLQ
        # holds every poison message.
        end = None
        next_report = time.monotonic() + 10
        while time.monotonic() < deadline and not w.stop.is_set():
            time.sleep(0.05)
            with lock:
                healthy_done = len(set(acked)) >= healthy_total
            if time.monotonic() > next_report:
                next_report += 10
                progress(
                    f"W2 {state['healthy']}/{healthy_total} healthy acked, "
                    f"source {driver.depth(q)}, DLQ {driver.depth(dlq)}/{len(bad)}"
                )
            # A system that dead-letters healthy messages never acks them all: then drained
            # means the source is empty and acked + dead-lettered account for every message.
            if driver.depth(q) == 0 and (
                (healthy_done and driver.depth(dlq) >= len(bad))
                or len(set(acked)) + driver.depth(dlq) >= p.n
            ):
                end = time.monotonic()
                break
        w.stop.set()
        w.join(time.monotonic() + 5)
        end = end or time.monotonic()
        verdict = verify_poison(sent, acked, driver.dlq_keys(dlq, poison_ids), driver.depth(q))
        return {
            "n": p.n,
            "poison": len(bad),
            "complete": verdict.ok,
            "e2e": p.n / max(end - t0, 1e-9) if end else None,
            "releases": state["releases"],
            "seconds": end - t0,
            "verify": verdict.as_dict(),
        }
    finally:
        driver.delete_queue(q)
        driver.delete_queue(dlq)


def redrive(driver: Driver, p: Params) -> dict[str, Any]:
    """W3: move a DLQ of `redrive_n` messages back to its source."""
    q, dlq = _name("w3"), _name("w3-dlq")
    driver.create_queue(q, dlq, p.deliveries)
    try:
        bodies = [make_body(key_of(i), False) for i in range(p.redrive_n)]
        w = Workers(driver)
        fill_deadline = time.monotonic() + p.timeout
        filled = _produce(w, driver, dlq, bodies, p.producers)
        w.join(fill_deadline)
        in_dlq = int(filled.get("sent", 0))
        driver.redrive_started = None
        t0 = time.monotonic()
        moved = driver.redrive(dlq, q, in_dlq, t0 + p.timeout)
        # A native task may report done before the last move is visible: wait for the source.
        while driver.depth(q) < moved and time.monotonic() < t0 + p.timeout:
            time.sleep(0.02)
        elapsed = time.monotonic() - (driver.redrive_started or t0)
        return {
            "n": in_dlq,
            "moved": moved,
            "complete": moved >= p.redrive_n,
            "rate": moved / max(elapsed, 1e-9),
            "mode": driver.redrive_mode,
            "seconds": elapsed,
        }
    finally:
        driver.delete_queue(q)
        driver.delete_queue(dlq)


def latency(driver: Driver, p: Params) -> dict[str, Any]:
    """W4: one claim/receive of one message at a fixed rate; p50 and p99 of its round trip."""
    q = _name("w4")
    driver.create_queue(q)
    try:
        total = int(p.rate * p.duration)
        w = Workers(driver)
        _produce(w, driver, q, [make_body(key_of(i), False) for i in range(total + 10)], 2)
        w.join(time.monotonic() + p.timeout)
        s = driver.session()
        samples: list[float] = []
        empty = 0
        try:
            t0 = time.monotonic()
            for i in range(total):
                pause = t0 + i / p.rate - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                elapsed, msgs = s.receive_one_timed(q)
                samples.append(elapsed)
                if msgs:
                    s.ack(q, msgs)
                else:
                    empty += 1
        finally:
            s.close()
        return {
            "n": len(samples),
            "empty": empty,
            "complete": empty == 0,
            "p50_ms": percentile(samples, 50) * 1000,
            "p99_ms": percentile(samples, 99) * 1000,
            "max_ms": max(samples) * 1000 if samples else None,
        }
    finally:
        driver.delete_queue(q)


WORKLOADS: dict[str, Callable[[Driver, Params], dict[str, Any]]] = {
    "w1": steady,
    "w2": poison,
    "w3": redrive,
    "w4": latency,
}
