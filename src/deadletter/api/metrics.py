"""Prometheus metrics: engine events counted by a listener, request latency by a middleware.

Two bounds keep the exposition safe to show and cheap to scrape (docs/security.md#metrics):

- Cardinality: each tenant gets its own `queue` (and `source`, `dlq`, `tag`) label values
  for its first `max_queues` names only, all its SQS regions (`<tenant>@<region>`) together;
  later names are counted under `OTHER`. First come,
  not top-N by volume: a counter series must never go down, and a queue moving into or out
  of a top-N would move its count between series.
- Visibility: `exposition(project)` keeps only the samples of one project (and of its SQS
  regions, `<project>@<region>`), for a project's admin; the operator sees everything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deadletter.domain.errors import DeadletterError
from deadletter.domain.projects import tenant_of
from deadletter.engine import EngineListener, TagInfo

# The label value of a project's queues past its first `max_queues` (a queue name cannot
# hold `~`, on either face).
OTHER = "~other"
DEFAULT_MAX_QUEUES = 100

# Reads the tags of (project, queue) pairs with their counts (`Engine.tags_of`).
TagReader = Callable[[Iterable[tuple[str, str]]], list[TagInfo]]


class Metrics(EngineListener):
    """One registry per app, so several apps in one process never share counters."""

    def __init__(self, max_queues: int = DEFAULT_MAX_QUEUES) -> None:
        self.max_queues = max_queues
        # (tenant, kind) -> the (project, name) pairs labelled so far, regions included
        self._named: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self._lock = threading.Lock()
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
        self.dead_letters_expired_total = Counter(
            "deadletter_dead_letters_expired",
            "Dead letters that expired in their dead-letter queue and were dropped (counted in"
            " deadletter_messages_expired as well).",
            ["project", "dlq"],
            registry=r,
        )
        self.dropped_total = Counter(
            "deadletter_messages_dropped",
            "Messages dropped past a limit, by reason: not eligible for the DLQ (max_claims,"
            " expired, rejected), or pushed out of a bounded queue without one (maxlen).",
            ["project", "queue", "reason"],
            registry=r,
        )
        self.redriven_total = Counter(
            "deadletter_messages_redriven",
            "Messages moved out of a dead-letter queue by redrive tasks.",
            ["project", "dlq"],
            registry=r,
        )
        self.triaged_total = Counter(
            "deadletter_dead_letters_triaged",
            "Dead letters archived out of a DLQ, restored into it from its archive, or"
            " discarded for good, by action.",
            ["project", "dlq", "action"],
            registry=r,
        )
        self.tag_messages_total = Counter(
            "deadletter_tag_messages",
            "Messages claimed, acknowledged and dead-lettered by each consumer tag.",
            ["project", "queue", "tag", "event"],
            registry=r,
        )
        # Labelled by kind only (new, rate_jump): a pattern id or a DLQ would grow without bound.
        self.pattern_alerts_total = Counter(
            "deadletter_pattern_alerts",
            "Failure-pattern alerts raised when a DLQ's patterns were stored.",
            ["kind"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "deadletter_http_request_duration_seconds",
            "HTTP request latency.",
            ["method", "route", "status"],
            registry=r,
        )

    def watch_tags(self, read: TagReader) -> None:
        """Gauges of each consumer tag's ready and claimed messages, read at each scrape for
        the queues that have a label of their own (a queue under OTHER has no tag gauges)."""
        self.registry.register(_TagGauges(self, read))

    def labelled_queues(self) -> list[tuple[str, str]]:
        with self._lock:
            return [pair for (_, kind), pairs in self._named.items() if kind == "queue"
                    for pair in sorted(pairs)]  # fmt: skip

    def _q(self, project: str, name: str, kind: str = "queue") -> str:
        """`name` as a label value: itself while the project's tenant has fewer than
        `max_queues` names of this kind in all its regions, OTHER after that."""
        key = (project, name)
        with self._lock:
            named = self._named.setdefault((tenant_of(project), kind), set())
            if key in named:
                return name
            if len(named) < self.max_queues:
                named.add(key)
                return name
        return OTHER

    def sent(self, project: str, queue: str, count: int) -> None:
        self.sent_total.labels(project, self._q(project, queue)).inc(count)

    def claimed(self, project: str, queue: str, count: int) -> None:
        self.claimed_total.labels(project, self._q(project, queue)).inc(count)

    def acknowledged(self, project: str, queue: str, count: int) -> None:
        self.acknowledged_total.labels(project, self._q(project, queue)).inc(count)

    def dead_lettered(self, project: str, source: str, dlq: str, reason: str, count: int) -> None:
        self.dead_lettered_total.labels(
            project, self._q(project, source), self._q(project, dlq), reason
        ).inc(count)

    def expired(self, project: str, queue: str, count: int) -> None:
        self.expired_total.labels(project, self._q(project, queue)).inc(count)

    def dead_letters_expired(self, project: str, dlq: str, sources: list[str], count: int) -> None:
        self.dead_letters_expired_total.labels(project, self._q(project, dlq)).inc(count)

    def dropped(self, project: str, queue: str, reason: str, count: int) -> None:
        self.dropped_total.labels(project, self._q(project, queue), reason).inc(count)

    def redriven(self, project: str, dlq: str, task_id: str, count: int) -> None:
        self.redriven_total.labels(project, self._q(project, dlq)).inc(count)

    def archived(self, project: str, dlq: str, count: int) -> None:
        self.triaged_total.labels(project, self._q(project, dlq), "archived").inc(count)

    def restored(self, project: str, dlq: str, count: int) -> None:
        self.triaged_total.labels(project, self._q(project, dlq), "restored").inc(count)

    def discarded(self, project: str, dlq: str, count: int) -> None:
        self.triaged_total.labels(project, self._q(project, dlq), "discarded").inc(count)

    def tag_delivery(self, project: str, queue: str, tag: str, event: str, count: int) -> None:
        self.tag_messages_total.labels(
            project, self._q(project, queue), self._q(project, tag, "tag"), event
        ).inc(count)

    def watch_long_polls(self, waiting: Callable[[], int]) -> None:
        """A gauge of the long polls waiting in this process, read from `waiting` when
        scraped (server-wide: it carries no project, so only an operator sees it)."""
        Gauge(
            "deadletter_long_polls_waiting",
            "SQS receives waiting for a message in this server process.",
            registry=self.registry,
        ).set_function(lambda: float(waiting()))

    def exposition(self, project: str | None = None) -> bytes:
        """Every metric (`project` None: the operator's view), or only one project's samples;
        a family without a project label (HTTP latency, all projects' traffic together) is
        the operator's only."""
        if project is None:
            return generate_latest(self.registry)
        return generate_latest(_OneProject(self.registry, project))

    def pattern_alerts(self, project: str, dlq: str, kind: str, count: int) -> None:
        self.pattern_alerts_total.labels(kind).inc(count)

    async def endpoint(self, request: Request) -> Response:
        # A scrape reads the store (the tag gauges): off the event loop.
        return await run_in_threadpool(self.response, None)

    def response(self, project: str | None) -> Response:
        return Response(self.exposition(project), media_type=CONTENT_TYPE_LATEST)


class _TagGauges:
    """A collector (prometheus_client's sense) of the tag gauges; a store that does not answer
    leaves them out of the scrape, and the counters still answer."""

    def __init__(self, metrics: Metrics, read: TagReader) -> None:
        self.metrics = metrics
        self.read = read

    def _families(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        labels = ["project", "queue", "tag"]
        return (
            GaugeMetricFamily(
                "deadletter_tag_messages_ready", "Messages each consumer tag may claim now.",
                labels=labels),
            GaugeMetricFamily(
                "deadletter_tag_messages_claimed", "Messages each consumer tag has claimed.",
                labels=labels),
        )  # fmt: skip

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        try:
            infos = self.read(self.metrics.labelled_queues())
        except DeadletterError:
            return
        totals: dict[tuple[str, str, str], tuple[int, int]] = {}
        for info in infos:
            t = info.tag
            key = (t.project, t.queue, self.metrics._q(t.project, t.name, "tag"))
            ready, claimed = totals.get(key, (0, 0))
            totals[key] = (ready + info.counts.ready, claimed + info.counts.claimed)
        ready_family, claimed_family = self._families()
        for key, (ready, claimed) in sorted(totals.items()):
            ready_family.add_metric(list(key), ready)
            claimed_family.add_metric(list(key), claimed)
        yield ready_family
        yield claimed_family


class _OneProject:
    """The registry's families with only the samples of one project (a collector in
    prometheus_client's sense: anything with `collect`)."""

    def __init__(self, registry: CollectorRegistry, project: str) -> None:
        self.registry = registry
        self.project = project

    def _own(self, labels: dict[str, str]) -> bool:
        project = labels.get("project")
        return project is not None and tenant_of(project) == self.project

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            kept = Metric(family.name, family.documentation, family.type, family.unit)
            kept.samples = [s for s in family.samples if self._own(s.labels)]
            if kept.samples:
                yield kept


class RequestTimes:
    """Each request's seconds, labelled by method, route template and status."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        # `labels()` takes a lock and builds its key on every call; the series are few
        # (method x route x status) and this runs on the event loop only.
        self.series: dict[tuple[str, str, int], Histogram] = {}

    def observe(self, method: str, template: str, status: int, seconds: float) -> None:
        key = (method, template, status)
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = self.metrics.request_seconds.labels(
                method, template, str(status)
            )
        series.observe(seconds)


class LatencyMiddleware:
    """Times every HTTP request, labelled by the route template so paths do not explode."""

    def __init__(self, app: ASGIApp, times: RequestTimes) -> None:
        self.app = app
        self.times = times

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
            self.times.observe(scope["method"], template, status, time.perf_counter() - start)
