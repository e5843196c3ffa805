"""The console's routes: the page, its static files and the live feed."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

from deadletter.api.console.feed import Feed, ProjectOf
from deadletter.api.notify import OtherProcesses

STATIC = Path(__file__).parent / "static"

# The page loads nothing from elsewhere and runs no inline script; a token kept in
# sessionStorage is therefore only as safe as this policy keeps injected script out.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


class _Static(StaticFiles):
    """Static files with the console's security headers and no caching across versions."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                headers.append((b"cache-control", b"no-cache"))
                message = {**message, "headers": headers}
            await send(message)

        await super().__call__(scope, receive, send_with_headers)


class Console:
    """What app.py mounts: `feed` is registered with the engine, `routes()` go in the table."""

    def __init__(
        self,
        default_project: str,
        project_of: ProjectOf | None = None,
        others: OtherProcesses | None = None,
    ) -> None:
        self.feed = Feed(default_project, project_of, others=others)

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/console", _redirect, methods=["GET"]),
            Route("/console/", _index, methods=["GET"]),
            Route("/console/events", self.feed.endpoint, methods=["GET"]),
            Mount("/console/static", _Static(directory=STATIC), name="console-static"),
        ]


async def _redirect(_: Request) -> Response:
    return RedirectResponse("/console/", status_code=308)


async def _index(_: Request) -> Response:
    headers = SECURITY_HEADERS | {"Cache-Control": "no-cache"}
    return FileResponse(STATIC / "index.html", media_type="text/html", headers=headers)
