"""The background sender of notifications: takes due ones from the store, hands them to the
webhook sender (`notifier.WebhookSender`, wired in by the server) with bounded concurrency,
and records each outcome (delivered, retry later, or given up)."""

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

log = logging.getLogger("deadletter.deliveries")

# How much longer than a POST may take a taken notification stays leased to this process.
LEASE_MARGIN = 30.0


@dataclass(frozen=True)
class DeliverySettings:
    """`concurrency` POSTs at most at once, `per_subscriber` of them to one subscription, so
    that a slow or failing subscriber holds a few slots and never every one."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float = 10.0
    concurrency: int = 8
    per_subscriber: int = 2
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
        with self._lock:
            free = self.settings.concurrency - sum(self._in_flight.values())
            busy = [s for s, n in self._in_flight.items() if n >= self.settings.per_subscriber]
        if free <= 0:
            return 0
        lease = self.settings.timeout + LEASE_MARGIN
        taken = self.engine.subscriptions.take(free, busy, lease)
        started, left = 0, []
        for d in self._fair(taken):
            with self._lock:
                if self._in_flight[d.subscription_id] >= self.settings.per_subscriber:
                    left.append(d)
                    continue
                self._in_flight[d.subscription_id] += 1
            self._pool.submit(self._send, d)
            started += 1
        if left:  # due again at once, for the next round to take once a slot is free
            self.engine.subscriptions.release(left)
        return started

    def _fair(self, taken: list[Delivery]) -> list[Delivery]:
        """Oldest first, but round-robin between subscriptions."""
        rank: Counter[str] = Counter()
        order = []
        for i, d in enumerate(taken):
            order.append((rank[d.subscription_id], i, d))
            rank[d.subscription_id] += 1
        return [d for _, _, d in sorted(order, key=lambda t: (t[0], t[1]))]

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
                    d.id, outcome.error or "failed", outcome.final, self.settings.retry
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
                self._idle.notify_all()
