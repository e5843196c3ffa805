"""The JSON answers of every face, written by msgspec.

Starlette's `JSONResponse` writes with the `json` module; msgspec writes the same compact
UTF-8 (no spaces, non-ASCII as is) about ten times faster on the faces' answers (`./dev bench
framework`). What a client parses is the same value; only a float's spelling may differ
(`1e16` where `json` writes `1e+16`). Integers of any size are written as `json` writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from starlette.responses import JSONResponse as _JSONResponse
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

_encode = msgspec.json.Encoder().encode


class JSONResponse(_JSONResponse):
    def render(self, content: Any) -> bytes:
        return _encode(content)


def dumps(content: Any) -> bytes:
    """`content` as the faces write it."""
    return _encode(content)


class LateJSONResponse(Response):
    """A JSON answer shaped and written as it is sent, not as the handler returns: on
    PostgreSQL a message route's handler returns inside its group's turn (`api/threads.py`),
    where what only shapes the answer would hold up the calls queued behind it."""

    media_type = "application/json"

    def __init__(
        self,
        content: Callable[[], Any],
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.content = content
        self.status_code = status_code
        self.given_headers = headers
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.body = _encode(self.content())
        self.init_headers(self.given_headers)
        await super().__call__(scope, receive, send)
