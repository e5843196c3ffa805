"""A body sent without a length (chunked) is held to the limit byte for byte, however it is
cut into chunks: at the limit it passes whole, one byte over it is refused, and the refusal
comes before more than the limit and one chunk has been read."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import anyio
import httpx
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from deadletter.api.limits import BodyLimit

LIMIT = 1024


async def echo(request: Request) -> Response:
    return PlainTextResponse(str(len(await request.body())))


def refuse(scope: Scope, limit: int) -> Response:
    return JSONResponse({"title": "Too large", "description": f"limit {limit}"}, status_code=413)


def _cuts(total: int) -> st.SearchStrategy[list[int]]:
    """Chunk sizes (each at least 1) adding up to `total`."""
    return st.lists(st.integers(1, total - 1), max_size=12, unique=True).map(
        lambda points: [b - a for a, b in itertools.pairwise([0, *sorted(points), total])]
    )


def _post(sizes: list[int]) -> tuple[int, str, int]:
    """(status, body, bytes the client had sent) of a chunked POST of chunks of `sizes`."""
    sent = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal sent
        for size in sizes:
            sent += size
            yield b"x" * size

    async def call() -> httpx.Response:
        inner = Starlette(routes=[Route("/", echo, methods=["POST"])])
        app = BodyLimit(inner, lambda scope: LIMIT, refuse)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post("/", content=chunks())

    response = anyio.run(call)
    return response.status_code, response.text, sent


@settings(deadline=None)
@given(_cuts(LIMIT))
def test_a_chunked_body_at_the_limit_passes(sizes: list[int]) -> None:
    assert _post(sizes)[:2] == (200, str(LIMIT))


@settings(deadline=None)
@given(_cuts(LIMIT + 1), st.lists(st.integers(1, 2 * LIMIT), max_size=4))
def test_a_chunked_body_one_byte_over_is_refused_unread_beyond(
    sizes: list[int], more: list[int]
) -> None:
    # A body whose chunks pass the limit by one byte at the last of `sizes`, `more` after it
    status, _, sent = _post(sizes + more)
    assert status == 413
    # read no further than the chunk that passed the limit
    assert sent == LIMIT + 1
