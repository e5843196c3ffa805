"""Bodies over the limit are refused before they are read in full, in the protocol's format."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from deadletter.api.limits import BodyLimit

LIMIT = 1024
seen_bodies: list[int] = []


async def echo(request: Request) -> Response:
    body = await request.body()
    seen_bodies.append(len(body))
    return PlainTextResponse(str(len(body)))


def refuse(scope: Scope, limit: int) -> Response:
    return JSONResponse({"title": "Too large", "description": f"limit {limit}"}, status_code=413)


def app() -> BodyLimit:
    inner = Starlette(routes=[Route("/", echo, methods=["POST"])])
    return BodyLimit(inner, lambda scope: LIMIT, refuse)


async def _post(content: bytes | Iterator[bytes]) -> httpx.Response:
    transport = httpx.ASGITransport(app=app())
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        return await client.post("/", content=content)


@pytest.mark.anyio
async def test_declared_length_over_limit_is_refused_unread() -> None:
    seen_bodies.clear()
    response = await _post(b"x" * (LIMIT + 1))
    assert response.status_code == 413
    assert response.json()["description"] == f"limit {LIMIT}"
    assert seen_bodies == []


@pytest.mark.anyio
async def test_chunked_body_is_refused_once_it_passes_the_limit() -> None:
    seen_bodies.clear()

    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(100):
            yield b"x" * 100

    transport = httpx.ASGITransport(app=app())
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        response = await client.post("/", content=chunks())
    assert response.status_code == 413
    assert seen_bodies == []


@pytest.mark.anyio
async def test_body_at_the_limit_passes() -> None:
    seen_bodies.clear()
    response = await _post(b"x" * LIMIT)
    assert response.status_code == 200
    assert response.text == str(LIMIT)
