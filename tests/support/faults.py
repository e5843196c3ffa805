"""A TCP proxy whose faults a test switches: what a database looks like to a server when the
network or the database misbehaves.

Modes, set with `FaultProxy.mode(...)` while connections are open:
- `"pass"`: bytes go through;
- `"latency"`: each chunk waits `delay` seconds before it goes on;
- `"blackhole"`: bytes vanish both ways and new connections are accepted but hear nothing
  (a dead host or a dropped route: the client's kernel still sees a live peer);
- `"down"`: every connection is reset and new ones are refused (the database stopped).
`reset()` resets every open connection at once (mid-transaction, for the clients in one).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from typing import Literal

Mode = Literal["pass", "latency", "blackhole", "down"]


class FaultProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._mode: Mode = "pass"
        self.delay = 0.0
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener = self._listen(0)
        self.port: int = self._listener.getsockname()[1]
        self._stopped = False
        self._accepting = self._start_accepting()

    def _listen(self, port: int) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
        return sock

    def _start_accepting(self) -> threading.Thread:
        thread = threading.Thread(target=self._accept, args=(self._listener,), daemon=True)
        thread.start()
        return thread

    def mode(self, mode: Mode, delay: float = 0.0) -> None:
        with self._lock:
            was, self._mode, self.delay = self._mode, mode, delay
        if mode == "down" and was != "down":
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
            self._listener.close()  # refused from now on
            self._accepting.join(timeout=5)
            self.reset()
        elif was == "down" and mode != "down":
            self._listener = self._listen(self.port)
            self._accepting = self._start_accepting()

    def reset(self) -> None:
        """Reset every open connection (RST to both ends)."""
        with self._lock:
            sockets, self._open = list(self._open), set()
        for sock in sockets:
            _abort(sock)

    def close(self) -> None:
        self._stopped = True
        self.mode("down")

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed: the proxy is down
            if self._mode == "blackhole":
                self._track(client)
                threading.Thread(target=_swallow, args=(client,), daemon=True).start()
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:
                _abort(client)
                continue
            self._track(client)
            self._track(server)
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                mode, delay = self._mode, self.delay
                if mode == "blackhole":
                    continue
                if mode == "latency":
                    time.sleep(delay)
                dst.sendall(data)
        except OSError:
            pass
        _abort(dst)
        _abort(src)


def _swallow(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while sock.recv(65536):
            pass


def _abort(sock: socket.socket) -> None:
    """Close with RST rather than FIN, and wake a thread blocked reading it."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
