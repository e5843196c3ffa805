"""The message routes of both faces, answered before the app's middleware stack and router.

Nearly every request of a producer or a consumer is one of a handful of routes (`HOT`).
Starlette's router tries its table in order (an SQS `POST /` comes after some sixty routes),
and each request would pass through every layer of the middleware stack, each wrapping the
`send` of the one outside it. `HotRoutes` sits outside that stack: it resolves a request of one
of the hot routes by that route's own pattern, does what the stack would have done for it
(the body limit, the latency metric), calls the endpoint and sends its response; every other
request goes on to the stack unchanged. The hot endpoints answer every error themselves, in
their face's format, so none needs the stack's exception layers; a body without a declared
length (chunked) also goes to the stack, whose `BodyLimit` counts it as it arrives.

A hot route is tried before the routes the table lists ahead of it, so none of those may take
the same requests (tests/api/test_hot_routes.py checks it for every hot route).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence

from starlette._utils import get_route_path  # the path as `Route.matches` reads it
from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from deadletter.api.limits import Refusal, known_length
from deadletter.api.metrics import RequestTimes

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
    """ASGI app in front of `app` (the middleware stack): a request one of `routes` takes is
    answered by its endpoint here, under `limit_for`'s body limit, timed into `times`."""

    def __init__(
        self,
        app: ASGIApp,
        routes: Sequence[Route],
        limit_for: Callable[[Scope], int],
        refuse: Refusal,
        times: RequestTimes,
    ) -> None:
        self.app = app
        self.limit_for = limit_for
        self.refuse = refuse
        self.times = times
        self.by_method: dict[str, list[Route]] = {}
        for route in routes:
            # Starlette would run a synchronous endpoint in a thread; these never are.
            assert inspect.iscoroutinefunction(route.endpoint), route.path
            for method in route.methods or ():
                if (method, route.path) in HOT:
                    self.by_method.setdefault(method, []).append(route)

    def _resolve(self, scope: Scope) -> tuple[Route, dict[str, object]] | None:
        """The hot route that takes `scope`, with its path parameters (as `Route.matches`
        converts them)."""
        routes = self.by_method.get(scope["method"])
        if not routes:
            return None
        path = get_route_path(scope)
        for route in routes:
            found = route.path_regex.match(path)
            if found is not None:
                convertors = route.param_convertors
                params = {k: convertors[k].convert(v) for k, v in found.groupdict().items()}
                return route, params
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        resolved = self._resolve(scope)
        declared = known_length(scope)
        if resolved is None or declared is None:
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope)
        if declared > limit:  # refused before it is routed, as `BodyLimit` refuses it
            await self.refuse(scope, limit)(scope, receive, send)
            return
        route, params = resolved
        scope["route"] = route
        scope["endpoint"] = route.endpoint
        scope["path_params"] = {**scope.get("path_params", {}), **params}
        start = time.perf_counter()
        status = 500
        try:
            response = await route.endpoint(Request(scope, receive, send))
            status = response.status_code
            await response(scope, receive, send)
        finally:
            self.times.observe(scope["method"], route.path, status, time.perf_counter() - start)
