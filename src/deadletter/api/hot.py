"""The message routes of both faces, dispatched ahead of Starlette's router.

Nearly every request of a producer or a consumer is one of a handful of routes (`HOT`).
Starlette's router tries its table in order (an SQS `POST /` comes after some sixty routes)
and wraps the endpoint in its exception layer, which these endpoints never reach: they answer
every error themselves, in their face's format. `HotRoutes` tries only the hot routes of the
request's method and calls the endpoint directly; every other request goes on to Starlette
unchanged. The body limit and the latency metrics wrap both paths alike.

A hot route is tried before the routes the table lists ahead of it, so none of those may take
the same requests (tests/api/test_hot_routes.py checks it for every hot route).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from starlette.requests import Request
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

Q = "/v2/queues/{queue}"
# (method, path) of the routes that move messages, on both faces.
HOT: frozenset[tuple[str, str]] = frozenset(
    {
        ("POST", Q + "/messages"),  # Zaqar: send
        ("DELETE", Q + "/messages"),  # Zaqar: delete by ids (and pop)
        ("DELETE", Q + "/messages/{message_id}"),  # Zaqar: delete one
        ("POST", Q + "/claims"),  # Zaqar: claim
        ("POST", "/"),  # SQS, JSON protocol: every action
    }
)


def hot_routes(routes: Sequence[BaseRoute]) -> list[Route]:
    """The routes of `routes` that `HOT` names, in their order."""
    return [
        r
        for r in routes
        if isinstance(r, Route) and any((m, r.path) in HOT for m in r.methods or ())
    ]


class HotRoutes:
    """ASGI middleware: a request one of `routes` takes is answered by its endpoint here."""

    def __init__(self, app: ASGIApp, routes: Sequence[Route]) -> None:
        self.app = app
        self.by_method: dict[str, list[Route]] = {}
        for route in routes:
            # Starlette would run a synchronous endpoint in a thread; these never are.
            assert inspect.iscoroutinefunction(route.endpoint), route.path
            for method in route.methods or ():
                if (method, route.path) in HOT:
                    self.by_method.setdefault(method, []).append(route)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for route in self.by_method.get(scope["method"], ()):
                match, child_scope = route.matches(scope)
                if match is Match.FULL:
                    scope["route"] = route
                    scope.update(child_scope)
                    response = await route.endpoint(Request(scope, receive, send))
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)
