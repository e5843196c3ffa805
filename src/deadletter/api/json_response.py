"""The JSON answers of every face, written by msgspec.

Starlette's `JSONResponse` writes with the `json` module; msgspec writes the same compact
UTF-8 (no spaces, non-ASCII as is) about ten times faster on the faces' answers (`./dev bench
framework`). What a client parses is the same value; only a float's spelling may differ
(`1e16` where `json` writes `1e+16`). Integers of any size are written as `json` writes them.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.responses import JSONResponse as _JSONResponse

_encode = msgspec.json.Encoder().encode


class JSONResponse(_JSONResponse):
    def render(self, content: Any) -> bytes:
        return _encode(content)


def dumps(content: Any) -> bytes:
    """`content` as the faces write it."""
    return _encode(content)
