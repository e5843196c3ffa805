"""HEAD answers as GET does, without the body, on every route.

Starlette routes a HEAD to the GET endpoint and sends what it returns, body included; uvicorn
drops that body on the wire, but an in-process transport does not. Dropping it here, once,
keeps the status and headers (Content-Length included) exactly those of GET everywhere.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadWithoutBody:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app(scope, receive, without_body)
