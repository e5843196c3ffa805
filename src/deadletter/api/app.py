"""One ASGI app, one port, two faces of one engine.

Zaqar's routes live under `/` (GET) and `/v2`; SQS requests are `POST /` (JSON protocol or
query protocol) and `POST /<account>/<queue>` (query protocol), so the two never collide.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Protocol

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route

from deadletter.api import openapi
from deadletter.api.auth import admin_routes, feed_project, guarded
from deadletter.api.console import Console
from deadletter.api.metrics import LatencyMiddleware, Metrics
from deadletter.api.options import AppOptions
from deadletter.api.sqs.routes import sqs_routes
from deadletter.api.zaqar.routes import zaqar_routes
from deadletter.engine.engine import Engine

__all__ = ["AppOptions", "Background", "build_app"]


class Background(Protocol):
    """Something the server runs beside the app, e.g. the engine's `Worker`."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


def build_app(
    engine: Engine, options: AppOptions | None = None, background: Sequence[Background] = ()
) -> Starlette:
    """`background` jobs start with the app's lifespan and stop, in reverse, when it ends."""
    options = options or AppOptions()

    metrics = Metrics()
    engine.add_listener(metrics)
    authority = options.authority
    console = Console(
        options.default_project,
        partial(feed_project, authority) if authority is not None else None,
    )
    engine.add_listener(console.feed)

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

    metrics_endpoint = guarded(authority, metrics.endpoint) if authority else metrics.endpoint
    routes: list[BaseRoute] = [
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/openapi.json", openapi.endpoint, methods=["GET"]),
        *(admin_routes(authority) if authority else []),
        *zaqar_routes(engine, options),
        *sqs_routes(engine, options),
        *console.routes(),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(LatencyMiddleware, metrics=metrics)],
        lifespan=lifespan,
    )
    app.state.metrics = metrics
    app.state.engine = engine
    app.state.options = options
    return app
