"""One ASGI app, one port, two faces of one engine.

Zaqar's routes live under `/` (GET) and `/v2`; SQS requests are `POST /` (JSON protocol or
query protocol) and `POST /<account>/<queue>` (query protocol), so the two never collide.
Zaqar's WebSocket transport takes WebSocket requests at every path (`zaqar/websocket.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Protocol

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Scope

from deadletter.api import openapi, refusals
from deadletter.api.auth import admin_routes, feed_project, guarded
from deadletter.api.console import Console
from deadletter.api.head import HeadWithoutBody
from deadletter.api.hot import HotRoutes, hot_routes
from deadletter.api.limits import BodyLimit, Limits
from deadletter.api.listeners import for_engine
from deadletter.api.metrics import LatencyMiddleware, Metrics, RequestTimes
from deadletter.api.notify import Notifier
from deadletter.api.options import AppOptions
from deadletter.api.sqs.routes import QueryGet, sqs_routes
from deadletter.api.zaqar.routes import zaqar_routes
from deadletter.api.zaqar.websocket import websocket_routes
from deadletter.engine import Engine

__all__ = ["AppOptions", "Background", "Limits", "build_app"]


class Background(Protocol):
    """Something the server runs beside the app, e.g. the engine's `Worker`."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class _App(Starlette):
    """Starlette, with the message routes answered ahead of its router, through the app's own
    middleware (`deadletter.api.hot`)."""

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        return HotRoutes(stack, hot_routes(self.routes), self.user_middleware)


def build_app(
    engine: Engine,
    options: AppOptions | None = None,
    background: Sequence[Background] = (),
    limits: Limits | None = None,
) -> Starlette:
    """`background` jobs start with the app's lifespan and stop, in reverse, when it ends."""
    options = options or AppOptions()
    limits = limits or Limits()

    def body_limit(scope: Scope) -> int:
        return limits.zaqar_body if refusals.is_zaqar(scope["path"]) else limits.sqs_body

    # The app's listeners, heard while the app lives, registered with the engine once for
    # every app built on it (`listeners.py`).
    listeners = for_engine(engine)
    metrics = Metrics(options.metrics_queues)
    listeners.add(metrics)
    metrics.watch_tags(engine.tags_of)
    authority = options.authority
    console = Console(
        options.default_project,
        partial(feed_project, authority) if authority is not None else None,
        others=engine,
    )
    listeners.add(console.feed)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        started: list[Background] = []
        try:
            for job in background:
                job.start()
                started.append(job)
            yield
        finally:
            for job in reversed(started):
                job.stop()

    metrics_endpoint = guarded(authority, metrics.response) if authority else metrics.endpoint
    # The queues a socket subscribed to announce their messages here, apart from the long
    # polls (whose number is a metric).
    sockets = Notifier(engine)
    listeners.add(sockets)
    routes: list[BaseRoute] = [
        # Zaqar's WebSocket transport: only WebSocket requests match this, HTTP ones pass on.
        *websocket_routes(sockets),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/openapi.json", openapi.endpoint, methods=["GET"]),
        *(admin_routes(authority) if authority else []),
        *console.routes(),
    ]
    zaqar = zaqar_routes(engine, options)
    long_polls = Notifier(engine)
    metrics.watch_long_polls(long_polls.waiting_total)
    sqs = sqs_routes(engine, options, long_polls)
    # `GET /?Action=...` is SQS's query protocol over GET, any other `GET /` Zaqar's versions
    # document: SQS's route for it takes only the former, so it goes first. SQS's other routes
    # come after Zaqar's fallback, which keeps every /v2 path Zaqar's.
    root_get = [r for r in sqs if isinstance(r, QueryGet) and r.path == "/"]
    routes += [*root_get, *zaqar, refusals.zaqar_fallback(zaqar)]
    routes += [r for r in sqs if r not in root_get]
    times = RequestTimes(metrics)
    app = _App(
        routes=routes,
        middleware=[
            Middleware(BodyLimit, limit_for=body_limit, refuse=refusals.too_large),
            Middleware(LatencyMiddleware, times=times),
            Middleware(HeadWithoutBody),
        ],
        exception_handlers={HTTPException: refusals.http_error},
        lifespan=lifespan,
    )
    app.state.metrics = metrics
    app.state.engine = engine
    app.state.options = options
    return app
