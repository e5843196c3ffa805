"""A response's head and body in one write to the socket.

uvicorn's httptools protocol writes a response's status line and headers as soon as the app
starts the response, and its body in a second write: two `send` calls a response, and two
segments for the client to wake up for (the socket has TCP_NODELAY). Every route of ours
answers with its whole body at once, so the head is held until the body's first write, and
the two go in one (`OneWriteTransport`). A head with no body write behind it (an answer to
HEAD, a response the app never finished) goes at the loop's next turn, or before the
connection closes, whichever comes first: nothing is held past the turn that wrote it.
"""

from __future__ import annotations

import asyncio
from typing import Any

# What a response's head starts with; an interim "100 Continue" goes at once: the client waits
# for it before it sends the body the app is waiting for.
_HEAD = b"HTTP/"
_CONTINUE = b"HTTP/1.1 100 "


class OneWriteTransport:
    """One request's view of its connection's transport (`RequestResponseCycle.transport`):
    the response's head held for its body; everything else as the transport does it."""

    __slots__ = ("_head_seen", "_held", "_loop", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._head_seen = False

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self.transport.write(held + data)
        elif not self._head_seen and data.startswith(_HEAD) and not data.startswith(_CONTINUE):
            self._head_seen = True
            self._held = data
            self._loop.call_soon(self.flush)
        else:
            self.transport.write(data)

    def flush(self) -> None:
        """Write the head still held, if any (its body never came this turn)."""
        held, self._held = self._held, None
        if held is not None and not self.transport.is_closing():
            self.transport.write(held)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)
