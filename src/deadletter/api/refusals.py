"""Answers given before a face's handler runs (body too large, no such path, wrong method),
each in the protocol of the path asked: Zaqar's JSON under `/v2`, SQS's JSON or XML elsewhere."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from deadletter.api.json_response import JSONResponse
from deadletter.api.sqs import wire
from deadletter.api.sqs.errors import SqsError
from deadletter.api.sqs.routes import TARGET_PREFIX
from deadletter.api.zaqar.errors import error_response

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
TITLES = {404: "Not found", 405: "Method not allowed", 413: "Request body too large"}


def is_zaqar(path: str) -> bool:
    return path == "/v2" or path.startswith("/v2/")


def answer(scope: Scope, status: int, description: str, headers: dict[str, str]) -> Response:
    """`status` with `description`, as the protocol of the request's path spells errors."""
    if is_zaqar(scope.get("path", "")):
        response: Response = error_response(status, TITLES.get(status, "Error"), description)
    else:
        shape = {413: "RequestEntityTooLarge"}.get(status, "UnsupportedOperation")
        error = SqsError(shape, description, status=status)
        target = dict(scope.get("headers", [])).get(b"x-amz-target", b"")
        if target.startswith(TARGET_PREFIX.encode()):
            body, extra = wire.json_error(error)
            response = JSONResponse(body, status, headers=extra, media_type=wire.JSON_CONTENT_TYPE)
        else:
            request_id = wire.new_request_id()
            response = Response(
                wire.xml_error(error, request_id),
                status,
                headers={"x-amzn-RequestId": request_id},
                media_type="text/xml",
            )
    response.headers.update(headers)
    return response


def too_large(scope: Scope, limit: int) -> Response:
    # The body is left unread, so the connection cannot be reused for another request.
    return answer(
        scope,
        413,
        f"The request body may not be larger than {limit} bytes.",
        {"Connection": "close"},
    )


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 and 405, which would otherwise be plain text."""
    assert isinstance(exc, HTTPException)
    # A HEAD is answered as its GET, the same words in the same length (api/head.py).
    method = "GET" if request.method == "HEAD" else request.method
    path = request.url.path
    description = {
        404: f"There is no resource at {path}.",
        405: f"{method} is not allowed on {path}.",
    }.get(exc.status_code, str(exc.detail))
    return answer(request.scope, exc.status_code, description, dict(exc.headers or {}))


def zaqar_fallback(routes: Sequence[BaseRoute]) -> Route:
    """A route for every `/v2/...` path no Zaqar route takes, so that no SQS route (whose
    `POST /<account>/<queue>` would match `POST /v2/queues`) answers it: 405 where a Zaqar
    route has the path under another method, else 404."""

    async def fallback(request: Request) -> Response:
        allowed: set[str] = set()
        for route in routes:
            match, _ = route.matches({**request.scope, "method": "__none__"})
            if match is Match.PARTIAL:
                allowed |= set(getattr(route, "methods", None) or ())
        if allowed:
            raise HTTPException(405, headers={"Allow": ", ".join(sorted(allowed))})
        raise HTTPException(404)

    return Route("/v2/{rest:path}", fallback, methods=METHODS)
