"""The background sender of notifications: takes due ones from the store, hands them to the
webhook sender (`notifier.WebhookSender`, wired in by the server) with bounded concurrency,
and records each outcome (delivered, retry later, or given up).

Fair shares: each round takes from every project owed notifications in turn
(`Subscriptions.take`) and starts them round robin between projects, then between a
project's subscriptions, so one project's backlog delays another's notifications by at most
a round, not by the backlog. A finished POST starts the next round at once, so one
subscription is sent to as fast as its receiver answers, `per_subscriber` POSTs at a time.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from deadletter.domain.errors import StoreUnavailable
from deadletter.domain.subscriptions import Delivery
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from deadletter.engine.notifier import WebhookSender
from deadletter.engine.subscriptions import RetryPolicy

log = logging.getLogger(__name__)

# How much longer than a POST may take a taken notification stays leased to this process.
LEASE_MARGIN = 30.0


@dataclass(frozen=True)
class DeliverySettings:
    """`concurrency` POSTs at most at once, `per_subscriber` of them to one subscription and
    `per_project` for one project, so that a slow or failing subscriber holds a few slots and
    never every one, and a project's many slow subscribers leave slots for other projects."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float = 10.0
    concurrency: int = 8
    per_subscriber: int = 2
    per_project: int = 4
    tick: float = 0.5
    sweep_interval: float = 10.0


class Deliveries(EngineListener):
    """Runs beside the worker, one thread plus a pool of `concurrency` senders.

    Notifications are rows: a taken one is leased in the store, so if this process dies with
    it in flight it is sent again when the lease ends (delivery is at least once). A send
    that stores notifications wakes the loop at once; other processes' are found at the
    next tick.
    """

    def __init__(
        self,
        engine: Engine,
        sender: WebhookSender,
        settings: DeliverySettings | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings or DeliverySettings()
        self._sender = sender
        self._pool = ThreadPoolExecutor(self.settings.concurrency, "deadletter-notify")
        self._in_flight: Counter[str] = Counter()
        self._project_in_flight: Counter[str] = Counter()
        # Taken (leased to this process) but not started: their subscription had no free slot.
        # Started before anything new is taken; given back if held for half their lease.
        self._ready: list[tuple[float, Delivery]] = []
        self._cursor: str | None = None  # the project the last round's take began with
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_sweep = 0.0
        engine.add_listener(self)

    def notifications_due(self, project: str, queue: str, count: int) -> None:
        # Not on every send: a round takes the store's write path even when nothing is due.
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._loop, name="deadletter-deliveries", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._pool.shutdown(wait=True)
        with self._lock:
            held, self._ready = [d for _, d in self._ready], []
        if held:
            try:
                self.engine.subscriptions.release(held)
            except Exception:
                log.exception("giving back unsent notifications failed; their lease ends them")
        self._sender.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self._sweep()
                self.run_once()
            except StoreUnavailable:
                self._stop.wait(1.0)  # the store logs the outage once
            except Exception:
                log.exception("notification round failed; retrying")
                self._stop.wait(1.0)
            self._wake.wait(self.settings.tick)

    def _sweep(self) -> None:
        now = self.engine.clock.now()
        if now >= self._next_sweep:
            self._next_sweep = now + self.settings.sweep_interval
            self.engine.subscriptions.sweep()

    def run_once(self) -> int:
        """Start sending what is due, as far as free slots allow; how many were started."""
        lease = self.settings.timeout + LEASE_MARGIN
        now = self.engine.clock.now()
        with self._lock:
            stale = [d for at, d in self._ready if now - at > lease / 2]
            self._ready = [(at, d) for at, d in self._ready if now - at <= lease / 2]
        if stale:  # due again at once, for whichever process has a slot first
            self.engine.subscriptions.release(stale)
        started = self._start([])
        with self._lock:
            free = self.settings.concurrency - sum(self._in_flight.values())
            waiting = {d.subscription_id for _, d in self._ready}
            full = {s for s, n in self._in_flight.items() if n >= self.settings.per_subscriber}
            cap = self.settings.per_project
            crowded = {p for p, n in self._project_in_flight.items() if n >= cap}
        if free <= 0:
            return started
        busy = sorted(full | waiting)
        taken = self.engine.subscriptions.take(
            free, busy=busy, lease=lease, after=self._cursor, skip=crowded
        )
        if taken:
            self._cursor = taken[0].project
        return started + self._start(taken)

    def _start(self, taken: list[Delivery]) -> int:
        """Start the held notifications and `taken` whose subscription has a free slot, fairly
        (`_fair`), while slots last; hold the rest."""
        now = self.engine.clock.now()
        started = []
        with self._lock:
            pending = [*self._ready, *((now, d) for d in taken)]
            self._ready = []
            free = self.settings.concurrency - sum(self._in_flight.values())
            for at, d in self._fair(pending):
                if (
                    free > 0
                    and self._in_flight[d.subscription_id] < self.settings.per_subscriber
                    and self._project_in_flight[d.project] < self.settings.per_project
                ):
                    self._in_flight[d.subscription_id] += 1
                    self._project_in_flight[d.project] += 1
                    free -= 1
                    started.append(d)
                else:
                    self._ready.append((at, d))
        for d in started:
            self._pool.submit(self._send, d)
        return len(started)

    @staticmethod
    def _fair(pending: list[tuple[float, Delivery]]) -> list[tuple[float, Delivery]]:
        """Oldest first, but round robin between projects, and within each project between
        its subscriptions: the n-th of every project goes before the (n+1)-th of any."""
        per_subscription: Counter[str] = Counter()
        by_subscription = []
        for i, (at, d) in enumerate(pending):
            by_subscription.append((per_subscription[d.subscription_id], i, (at, d)))
            per_subscription[d.subscription_id] += 1
        by_subscription.sort(key=lambda t: (t[0], t[1]))
        per_project: Counter[str] = Counter()
        by_project = []
        for j, (_, _, item) in enumerate(by_subscription):
            by_project.append((per_project[item[1].project], j, item))
            per_project[item[1].project] += 1
        return [item for _, _, item in sorted(by_project, key=lambda t: (t[0], t[1]))]

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until nothing is in flight; whether that happened within `timeout`."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._in_flight, timeout)

    def _send(self, d: Delivery) -> None:
        try:
            outcome = self._sender.send(d, self.settings.timeout)
            if outcome.ok:
                self.engine.subscriptions.delivered(d.id)
            else:
                result = self.engine.subscriptions.failed(
                    d.id,
                    error=outcome.error or "failed",
                    final=outcome.final,
                    policy=self.settings.retry,
                )
                log.info(
                    "notification failed",
                    extra={"subscriber": d.subscriber, "error": outcome.error, "then": result},
                )
        except Exception:
            log.exception("recording a notification's outcome failed; it is sent again later")
        finally:
            with self._idle:
                self._in_flight[d.subscription_id] -= 1
                if self._in_flight[d.subscription_id] <= 0:
                    del self._in_flight[d.subscription_id]
                self._project_in_flight[d.project] -= 1
                if self._project_in_flight[d.project] <= 0:
                    del self._project_in_flight[d.project]
                self._idle.notify_all()
            self._wake.set()  # a slot is free: the next round starts now, not at the tick
