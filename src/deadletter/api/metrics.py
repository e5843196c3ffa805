"""Prometheus metrics: engine events counted by a listener, request latency by a middleware."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deadletter.engine.events import EngineListener


class Metrics(EngineListener):
    """One registry per app, so several apps in one process never share counters."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.sent_total = Counter(
            "deadletter_messages_sent", "Messages sent.", ["project", "queue"], registry=r
        )
        self.claimed_total = Counter(
            "deadletter_messages_claimed",
            "Messages handed to consumers.",
            ["project", "queue"],
            registry=r,
        )
        self.acknowledged_total = Counter(
            "deadletter_messages_acknowledged",
            "Messages deleted by consumers.",
            ["project", "queue"],
            registry=r,
        )
        self.dead_lettered_total = Counter(
            "deadletter_messages_dead_lettered",
            "Messages moved to a dead-letter queue.",
            ["project", "source", "dlq", "reason"],
            registry=r,
        )
        self.expired_total = Counter(
            "deadletter_messages_expired",
            "Messages that expired and were dropped.",
            ["project", "queue"],
            registry=r,
        )
        self.dropped_total = Counter(
            "deadletter_messages_dropped",
            "Messages past a limit (max_claims, expired) dropped as not eligible for the DLQ.",
            ["project", "queue", "reason"],
            registry=r,
        )
        self.redriven_total = Counter(
            "deadletter_messages_redriven",
            "Messages moved out of a dead-letter queue by redrive tasks.",
            ["project", "dlq"],
            registry=r,
        )
        self.tag_messages_total = Counter(
            "deadletter_tag_messages",
            "Messages claimed, acknowledged and dead-lettered by each consumer tag.",
            ["project", "queue", "tag", "event"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "deadletter_http_request_duration_seconds",
            "HTTP request latency.",
            ["method", "route", "status"],
            registry=r,
        )

    def sent(self, project: str, queue: str, count: int) -> None:
        self.sent_total.labels(project, queue).inc(count)

    def claimed(self, project: str, queue: str, count: int) -> None:
        self.claimed_total.labels(project, queue).inc(count)

    def acknowledged(self, project: str, queue: str, count: int) -> None:
        self.acknowledged_total.labels(project, queue).inc(count)

    def dead_lettered(self, project: str, source: str, dlq: str, reason: str, count: int) -> None:
        self.dead_lettered_total.labels(project, source, dlq, reason).inc(count)

    def expired(self, project: str, queue: str, count: int) -> None:
        self.expired_total.labels(project, queue).inc(count)

    def dropped(self, project: str, queue: str, reason: str, count: int) -> None:
        self.dropped_total.labels(project, queue, reason).inc(count)

    def redriven(self, project: str, dlq: str, task_id: str, count: int) -> None:
        self.redriven_total.labels(project, dlq).inc(count)

    def tag_delivery(self, project: str, queue: str, tag: str, event: str, count: int) -> None:
        self.tag_messages_total.labels(project, queue, tag, event).inc(count)

    async def endpoint(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class LatencyMiddleware:
    """Times every HTTP request, labelled by the route template so paths do not explode."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def record_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record_status)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            self.metrics.request_seconds.labels(scope["method"], template, str(status)).observe(
                time.perf_counter() - start
            )
