"""Request bodies bounded before they are read in full, answered 413 in the caller's protocol.

A declared `Content-Length` over the limit is refused before a byte is read (the HTTP server
holds a body to its declared length); a body without one (chunked) is read here, counted as it
arrives and refused as soon as it passes the limit, so memory never holds more than the limit
plus one chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deadletter.domain.limits import BODY_BYTES

# What the faces may answer too-large bodies with: (scope, limit in bytes) -> response.
Refusal = Callable[[Scope, int], Response]


@dataclass(frozen=True)
class Limits:
    """The largest request body each face reads (see docs/limits.md for why these sizes).

    Zaqar: a message post is held to the queue's maximum message size by the face itself;
    stored failure patterns (the largest native documents) may take up to 4 MiB. SQS: a
    message or a batch carries at most 1 MiB, which the query protocol's URL-encoding may
    triple; 4 MiB leaves room for that and the parameter names around it.
    """

    zaqar_body: int = BODY_BYTES
    sqs_body: int = BODY_BYTES


class BodyLimit:
    """ASGI middleware: `limit_for(scope)` gives the largest body a request may carry."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[Scope], int], refuse: Refusal) -> None:
        self.app = app
        self.limit_for = limit_for
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope)
        declared = known_length(scope)
        if declared is not None and declared > limit:
            await self.refuse(scope, limit)(scope, receive, send)
            return
        if declared is not None:  # the HTTP server holds the body to its declared length
            await self.app(scope, receive, send)
            return
        # No length given (chunked): read up to the limit here, then hand the body on.
        body: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > limit:
                await self.refuse(scope, limit)(scope, receive, send)
                return
            body.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        replay = [{"type": "http.request", "body": b"".join(body), "more_body": False}]

        async def replayed() -> Message:
            return replay.pop() if replay else await receive()

        await self.app(scope, replayed, send)


def known_length(scope: Scope) -> int | None:
    """How long the request's body is, if its headers say: its `Content-Length`, or 0 when it
    declares neither a length nor a transfer coding (HTTP/1.1 then has no body); None when the
    body's length shows only as it arrives (chunked) or the length is no number."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
        if name == b"transfer-encoding":
            return None
    return 0
