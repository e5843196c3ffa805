"""The ASGI apps `./dev bench framework` serves, as factories each HTTP server can load.

`bare` is a Starlette route alone; `deadletter` is the real app (both faces) on the SQLite
file named by DEADLETTER_BENCH_DB, without the background worker."""

from __future__ import annotations

import os

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from deadletter.api.app import build_app
from deadletter.engine.engine import Engine
from deadletter.storage import open_store


def bare() -> Starlette:
    async def hello(request: Request) -> JSONResponse:
        return JSONResponse({"hello": "world"})

    return Starlette(routes=[Route("/hello", hello)])


def deadletter() -> Starlette:
    store = open_store(f"sqlite:///{os.environ['DEADLETTER_BENCH_DB']}")
    return build_app(Engine(store))
