"""Whether a store is answering: one log line when it stops, one when it is back.

During an outage every request fails the same way; a traceback per request would bury the
one fact an operator needs. The store notes each `StoreUnavailable` it raises and each
transaction that succeeds here, and only the changes of state are logged. `/v2/health` reads
the state back (`Engine.health`).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from deadletter.domain.errors import StoreUnavailable

log = logging.getLogger("deadletter.storage")


@dataclass(frozen=True)
class Outage:
    """Since when (epoch seconds) and why the store has been refusing work."""

    reason: str
    since: float
    # Reads still answer (a full disk): only a write that commits ends the outage.
    reads_served: bool


class Availability:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._outage: Outage | None = None

    @property
    def outage(self) -> Outage | None:
        return self._outage

    def failed(self, exc: StoreUnavailable) -> None:
        with self._lock:
            if self._outage is not None:
                return
            self._outage = Outage(exc.reason, time.time(), exc.reads_served)
        cause = exc.__cause__
        log.warning(
            "store unavailable; requests are answered 503 until it is back",
            extra={"reason": exc.reason, "error": _first_line(cause) if cause else exc.reason},
        )

    def succeeded(self, wrote: bool) -> None:
        """A transaction committed (`wrote`: and changed rows) or a read answered."""
        outage = self._outage
        if outage is None or (outage.reads_served and not wrote):
            return  # the common case reads one attribute and takes no lock
        with self._lock:
            if self._outage is not outage:
                return
            self._outage = None
        log.info(
            "store available again",
            extra={"reason": outage.reason, "seconds": round(time.time() - outage.since, 1)},
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
