"""The HTTP head of a request bounded as it arrives: request line, header count and bytes.

uvicorn's httptools protocol sets no bound on a request's head, and httptools gathers each
header by concatenating the pieces it reads, so one header of tens of MiB costs the event loop
seconds of copying while every other tenant's request waits (nothing of it reaches the app, so
no ASGI middleware can help). This protocol counts the head's bytes before the parser sees
them, feeding it at most what the bound leaves, and its lines and fields as they are parsed;
past a bound it answers 414 or 431 and closes the connection. The numbers are the limit
table's (`deadletter.domain.limits`).

A head that arrives in the same read as the end of the request before it (pipelining) is
counted from the next read on, so such a head may take at most twice the bound.
"""

from __future__ import annotations

import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from deadletter.api.one_write import OneWriteTransport
from deadletter.domain.limits import HEAD_BYTES, HEADER_COUNT, REQUEST_LINE


class HeadTooLarge(Exception):
    """Raised inside the parser's callbacks to stop it; the protocol answers."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the head bounded (uvicorn.Config(http=...))."""

    max_line = REQUEST_LINE
    max_headers = HEADER_COUNT
    max_head = HEAD_BYTES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0
        self._line_bytes = 0
        self._header_count = 0
        self._refusal: tuple[int, str] | None = None

    # Parser callbacks

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._line_bytes = self._header_count = 0

    def on_url(self, url: bytes) -> None:
        self._line_bytes += len(url)
        if self._line_bytes > self.max_line:
            self._refuse(414, f"The request line is longer than {self.max_line} bytes.")
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.max_headers:
            self._refuse(431, f"A request has at most {self.max_headers} header fields.")
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before:  # a new request's cycle: its answer in one write
            self.cycle.transport = OneWriteTransport(self.transport, self.loop)  # type: ignore[assignment]

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True
        self._head_bytes = 0

    def _refuse(self, status: int, description: str) -> None:
        self._refusal = (status, description)
        raise HeadTooLarge(description)

    # Transport

    def data_received(self, data: bytes) -> None:
        while data and self._in_head and not self.transport.is_closing():
            room = self.max_head - self._head_bytes
            if room <= 0:
                self._refusal = (431, f"A request's head is at most {self.max_head} bytes.")
                self.send_400_response("")
                return
            piece, data = data[:room], data[room:]
            self._head_bytes += len(piece)
            super().data_received(piece)
        if data and not self.transport.is_closing():
            super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        """uvicorn answers a parser error here; a bound passed answers its own status."""
        if self._refusal is None:
            super().send_400_response(msg)
            return
        status, description = self._refusal
        title = "Request line too long" if status == 414 else "Request header fields too large"
        body = json.dumps({"title": title, "description": description}).encode()
        self.transport.write(
            b"".join(
                [
                    STATUS_LINE[status],
                    b"content-type: application/json\r\n",
                    b"content-length: " + str(len(body)).encode() + b"\r\n",
                    b"connection: close\r\n\r\n",
                    body,
                ]
            )
        )
        self.transport.close()
