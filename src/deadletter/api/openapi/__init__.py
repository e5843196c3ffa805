"""The OpenAPI document of the native API (Zaqar v2 plus the dead-letter extensions), built
from the Zaqar face's route table (`paths.py`) and the schemas of its bodies (`schemas.py`)."""

from __future__ import annotations

from starlette.requests import Request

from deadletter.api.json_response import JSONResponse
from deadletter.api.openapi.paths import PATCH_TYPE, document

__all__ = ["PATCH_TYPE", "document", "endpoint"]


async def endpoint(request: Request) -> JSONResponse:
    return JSONResponse(document())
