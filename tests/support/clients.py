"""The real app in-process: an `httpx.AsyncClient` over `ASGITransport`, driven by an event
loop in a helper thread, behind a blocking face that tests call like a plain client."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import anyio.from_thread
import httpx
from starlette.types import ASGIApp

BASE_URL = "http://testserver"


class ApiClient:
    """A blocking face on `httpx.AsyncClient(transport=ASGITransport(app))`."""

    def __init__(self, portal: anyio.from_thread.BlockingPortal, client: httpx.AsyncClient):
        self.portal = portal
        self.client = client

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        async def call() -> httpx.Response:
            return await self.client.request(method, url, **kwargs)

        return self.portal.call(call)

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def head(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("HEAD", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PATCH", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", url, **kwargs)


@contextmanager
def in_process(
    app: ASGIApp, *, base_url: str = BASE_URL, headers: Mapping[str, str] | None = None
) -> Iterator[ApiClient]:
    """A client on `app` for the length of the block."""
    transport = httpx.ASGITransport(app=app)
    with anyio.from_thread.start_blocking_portal() as portal:
        client = httpx.AsyncClient(transport=transport, base_url=base_url, headers=headers)
        try:
            yield ApiClient(portal, client)
        finally:
            portal.call(client.aclose)
