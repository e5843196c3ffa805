"""A long command's stages, each with the time since the command started, on stderr."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from deadletter.cli.output import echo

# While a stage runs this long without a word, the command says it is still at it.
TICK_SECONDS = 5.0


class Progress:
    """Stages with the time since the command started, on stderr (stdout keeps the result).
    Inside `ticking()`, a stage that runs TICK_SECONDS without a word is said to be still
    running, with its own time, so that a slow Spark start or job never looks like a hang."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self._stage = ""
        self._since = self.started  # when the stage began
        self._said = self.started  # when the last line was written
        self._lock = threading.Lock()

    def __call__(self, stage: str) -> None:
        with self._lock:
            now = time.monotonic()
            self._stage, self._since = stage, now
            self._write(now, stage)

    def _write(self, now: float, text: str) -> None:
        self._said = now
        echo(f"[{now - self.started:6.1f}s] {text}", err=True)
        sys.stderr.flush()

    def _tick(self, every: float) -> None:
        with self._lock:
            now = time.monotonic()
            if self._stage and now - self._said >= every:
                self._write(now, f"... still {self._stage}: {now - self._since:.0f} s")

    @contextmanager
    def ticking(self) -> Iterator[None]:
        every = TICK_SECONDS
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(every / 5):
                self._tick(every)

        thread = threading.Thread(target=tick, name="progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
