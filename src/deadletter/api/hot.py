"""The message routes of both faces, answered ahead of Starlette's router.

Nearly every request of a producer or a consumer is one of a handful of routes, each a
`HotRoute` (its row says so: `hot` in the Zaqar face's table, `POST /` on the SQS face).
Starlette's router tries its table in order (an SQS `POST /` comes after some sixty routes),
behind two exception layers of its own. `HotRoutes` sits in front of the whole stack: a request
a hot route takes (as `Route.matches` says) goes through the app's own middleware, the same
layers every other request passes (the body limit, the latency metric), to that route's
endpoint; every other request goes on to the stack unchanged. The hot endpoints answer every
error themselves, in their face's format, so none needs Starlette's exception layers.

A hot route is tried before the routes the table lists ahead of it, so none of those may take
the same requests (tests/api/test_hot_routes.py checks it for every hot route).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send


class HotRoute(Route):
    """A route answered ahead of the router (a message route); otherwise a `Route`."""


def hot_routes(routes: Sequence[BaseRoute]) -> list[HotRoute]:
    """The hot routes of `routes`, in their order."""
    return [r for r in routes if isinstance(r, HotRoute)]


class HotRoutes:
    """ASGI app in front of `app` (the app's middleware stack and router): a request one of
    `routes` takes passes `middleware` (the app's own) to that route's endpoint."""

    def __init__(
        self, app: ASGIApp, routes: Sequence[HotRoute], middleware: Sequence[Middleware]
    ) -> None:
        self.app = app
        self.by_method: dict[str, list[HotRoute]] = {}
        for route in routes:
            # Starlette would run a synchronous endpoint in a thread; these never are.
            assert inspect.iscoroutinefunction(route.endpoint), route.path
            for method in route.methods or ():
                self.by_method.setdefault(method, []).append(route)
        layers: ASGIApp = _answer
        for cls, args, kwargs in reversed(middleware):
            layers = cls(layers, *args, **kwargs)
        self.layers = layers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for route in self.by_method.get(scope["method"], ()):
                match, child_scope = route.matches(scope)
                if match is Match.FULL:
                    scope["route"] = route
                    scope.update(child_scope)
                    await self.layers(scope, receive, send)
                    return
        await self.app(scope, receive, send)


async def _answer(scope: Scope, receive: Receive, send: Send) -> None:
    """The response of the endpoint of the route `HotRoutes` chose."""
    response = await scope["endpoint"](Request(scope, receive, send))
    await response(scope, receive, send)
