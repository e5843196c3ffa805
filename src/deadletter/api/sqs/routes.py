"""SQS routes (placeholder until the SQS face lands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import BaseRoute

from deadletter.engine.engine import Engine

if TYPE_CHECKING:
    from deadletter.api.app import AppOptions


def sqs_routes(engine: Engine, options: AppOptions) -> list[BaseRoute]:
    return []
