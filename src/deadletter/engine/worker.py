"""The background work a server does: the expiry sweep (and the archive's), automatic
redrive's rounds, and running redrive tasks at their rate."""

from __future__ import annotations

import logging
import math
import threading
import time

from deadletter.domain.errors import StoreUnavailable
from deadletter.domain.redrive import TaskStatus
from deadletter.engine import redrive
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from deadletter.engine.expiry import SWEEP_BATCH

log = logging.getLogger(__name__)


class Worker:
    """Runs in one thread per server process. Tasks survive restarts: they live in the store,
    and every step commits its moves together with the task's progress, so a step interrupted
    by a crash is either wholly done or not at all."""

    def __init__(self, engine: Engine, sweep_interval: float = 1.0, tick: float = 0.05) -> None:
        self.engine = engine
        self.sweep_interval = sweep_interval
        self.tick = tick
        self._stop = threading.Event()
        # Set by a stop, or by a task started, resumed or cancelled in this process: its step
        # need not wait for the next tick.
        self._wake = threading.Event()
        # Set by a task started, resumed or cancelled in this process (`redrive_due`): the
        # next round looks for tasks at once.
        self._due = threading.Event()
        self._thread: threading.Thread | None = None
        # The first round sweeps and looks for tasks: monotonic time counts from about the
        # machine's boot, so a start of 0 would put them off on a machine up for less than an
        # interval.
        self._last_sweep = -math.inf
        self._last_look = -math.inf
        # Whether the last look found a task: while one runs, every tick looks again.
        self._tasks_running = False
        engine.add_listener(_WakeWhenDue(self._wake, self._due))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="deadletter-worker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            busy = False
            try:
                busy = self.run_once()
            except StoreUnavailable:
                self._stop.wait(1.0)  # the store logs the outage once; the work waits for it
            except Exception:
                log.exception("background step failed; retrying")
                self._stop.wait(1.0)
            if not busy:  # an unlimited task with more to move goes on without a pause
                self._wake.wait(self.tick)
                self._wake.clear()

    def run_once(self) -> bool:
        """One round of work; True when an unlimited task has more to move right away."""
        now = time.monotonic()
        if now - self._last_sweep >= self.sweep_interval:
            self._last_sweep = now
            self._sweep()
        if not self._look_due(now):
            return False
        self._due.clear()
        self._last_look = now
        task_ids = self.engine.active_task_ids()
        self._tasks_running = bool(task_ids)
        busy = False
        for task_id in task_ids:
            busy |= self._isolated_step(task_id)
        return busy

    def _sweep(self) -> None:
        try:
            while self.engine.sweep_expired(SWEEP_BATCH) >= SWEEP_BATCH:
                pass
            # Archived dead letters past their retention leave, recorded.
            while self.engine.sweep_archives(SWEEP_BATCH) >= SWEEP_BATCH:
                pass
        except StoreUnavailable:
            pass  # logged once by the store; swept again next interval
        except Exception:  # the sweep is retried next interval; tasks still get their turn
            log.exception("expiry sweep failed; retrying at the next interval")
        # Automatic redrive rounds are due by the minute: looked at once an interval.
        try:
            self.engine.run_auto_redrives()
        except StoreUnavailable:
            pass
        except Exception:
            log.exception("automatic redrive failed; retrying at the next interval")

    def _look_due(self, now: float) -> bool:
        """Whether this round looks for running tasks: every tick while one runs or one was
        just made due here, otherwise once a sweep interval. An idle server asked the store
        twenty times a second, a read transaction each, for nothing (on PostgreSQL, every
        process of every host); a task another process starts is stepped there at once, and
        here from the next look."""
        if self._tasks_running or self._due.is_set():
            return True
        return now - self._last_look >= self.sweep_interval

    def _isolated_step(self, task_id: str) -> bool:
        """A step that raises fails its own task, never the others': tasks of every project
        share this thread, so one poisoned task must not stall them all."""
        try:
            return self._step(task_id)
        except StoreUnavailable:
            raise  # the store's outage, not the task's fault: it goes on once the store is back
        except Exception as exc:
            log.exception("redrive task step failed; marking it FAILED", extra={"task": task_id})
            reason = f"the task could not be stepped: {type(exc).__name__}: {exc}"
            try:
                self.engine.fail_redrive(task_id, reason)
            except Exception:
                log.exception("could not mark redrive task FAILED", extra={"task": task_id})
            return False

    def _step(self, task_id: str) -> bool:
        """One step of a task; True when it is unlimited and has more to move at once.

        The engine paces a task with a rate (in the task's row, so several server processes
        stepping it keep to the rate together); here every task gets a step each tick.
        """
        task = self.engine.redrive_step(task_id, self.engine.store.redrive_batch)
        if task.status is not TaskStatus.RUNNING:
            log.info(
                "redrive task finished",
                extra={"task": task_id, "status": task.status.value, "moved": task.moved}
                | ({"canary": task.canary.reason} if task.canary and task.canary.reason else {}),
            )
            return False
        # A task watching its canary waits for time to pass: it is looked at each tick.
        return task.rate is None and not redrive.watching(task)


class _WakeWhenDue(EngineListener):
    def __init__(self, wake: threading.Event, due: threading.Event) -> None:
        self._wake = wake
        self._due = due

    def redrive_due(self, project: str, dlq: str, task_id: str) -> None:
        self._due.set()
        self._wake.set()
