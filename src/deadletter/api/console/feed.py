"""The console's live feed: one project's engine events as server-sent events.

Engine hooks run on whatever thread committed the work (a request's worker thread, the
background worker), so events cross into the event loop with `call_soon_threadsafe`. The feed
carries only queue names, counts and reasons: a page that sees an event asks the public API for
what changed, so the feed never becomes a second API to keep in step.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from deadletter.api.json_response import JSONResponse
from deadletter.api.notify import OtherProcesses
from deadletter.api.zaqar.errors import ZaqarError, response_for
from deadletter.domain.errors import StoreUnavailable
from deadletter.domain.limits import limit
from deadletter.engine import EngineListener

Event = dict[str, Any]

# A stream ends after this long and the browser reconnects (`retry`): a server shutting down
# never waits on a page left open for longer than this.
STREAM_SECONDS = 20.0
# The project a request's credentials let it watch; raises ZaqarError to refuse.
ProjectOf = Callable[[Mapping[str, str]], str]
KEEPALIVE_SECONDS = 5.0
RETRY_MS = 1000
MAX_SUBSCRIBERS = 200
# One project's share, so that one project cannot hold every feed and leave others to poll.
MAX_PER_PROJECT = limit("live_feeds_per_project")
# A page that falls this far behind is told to reload its view instead of replaying events.
BACKLOG = 500
MAX_FILTER_QUEUES = 20


class _Subscriber:
    def __init__(self, project: str, queues: frozenset[str]) -> None:
        self.project = project
        self.queues = queues
        self.loop = asyncio.get_running_loop()
        self.events: asyncio.Queue[Event] = asyncio.Queue(maxsize=BACKLOG)
        self.overflowed = False

    def wants(self, project: str, event: Event) -> bool:
        if project != self.project:
            return False
        if not self.queues:
            return True
        return bool({event.get("queue"), event.get("dlq")} & self.queues)

    def offer(self, event: Event) -> None:
        """Runs on the loop; a full backlog becomes one `resync` instead of lost events."""
        if self.overflowed:
            return
        try:
            self.events.put_nowait(event)
        except asyncio.QueueFull:
            self.overflowed = True


class Feed(EngineListener):
    def __init__(
        self,
        default_project: str,
        project_of: ProjectOf | None = None,
        stream_seconds: float = STREAM_SECONDS,
        others: OtherProcesses | None = None,
    ) -> None:
        """`others`: the engine, asked to hear other processes' sends while a feed is open, so
        that their `available` events reach it too."""
        self.others = others
        self.default_project = default_project
        # With credentials required, the project comes from the request's token (and a
        # refusal is answered as the Zaqar face answers it).
        self.project_of = project_of
        self.stream_seconds = stream_seconds
        self._subscribers: set[_Subscriber] = set()
        self._lock = threading.Lock()

    # EngineListener: each hook becomes one event for the subscribers of its project.

    def messages_available(self, project: str, queue: str) -> None:
        self._publish(project, {"type": "available", "queue": queue})

    def sent(self, project: str, queue: str, count: int) -> None:
        self._publish(project, {"type": "sent", "queue": queue, "count": count})

    def claimed(self, project: str, queue: str, count: int) -> None:
        self._publish(project, {"type": "claimed", "queue": queue, "count": count})

    def acknowledged(self, project: str, queue: str, count: int) -> None:
        self._publish(project, {"type": "deleted", "queue": queue, "count": count})

    def dead_lettered(self, project: str, source: str, dlq: str, reason: str, count: int) -> None:
        event = {"type": "dead_lettered", "queue": source, "dlq": dlq, "reason": reason}
        self._publish(project, event | {"count": count})

    def expired(self, project: str, queue: str, count: int) -> None:
        self._publish(project, {"type": "expired", "queue": queue, "count": count})

    def redriven(self, project: str, dlq: str, task_id: str, count: int) -> None:
        event = {"type": "redriven", "queue": dlq, "task_id": task_id, "count": count}
        self._publish(project, event)

    def archived(self, project: str, dlq: str, count: int) -> None:
        self._publish(project, {"type": "archived", "queue": dlq, "count": count})

    def restored(self, project: str, dlq: str, count: int) -> None:
        self._publish(project, {"type": "restored", "queue": dlq, "count": count})

    def discarded(self, project: str, dlq: str, count: int) -> None:
        self._publish(project, {"type": "discarded", "queue": dlq, "count": count})

    def patterns_stored(self, project: str, dlq: str, count: int) -> None:
        self._publish(project, {"type": "patterns", "queue": dlq, "count": count})

    def pattern_alerts(self, project: str, dlq: str, kind: str, count: int) -> None:
        event = {"type": "pattern_alert", "queue": dlq, "kind": kind, "count": count}
        self._publish(project, event)

    def _publish(self, project: str, event: Event) -> None:
        with self._lock:
            targets = [s for s in self._subscribers if s.wants(project, event)]
        for sub in targets:
            # RuntimeError: its loop closed, the server is stopping.
            with contextlib.suppress(RuntimeError):
                sub.loop.call_soon_threadsafe(sub.offer, event)

    @property
    def subscriber_count(self) -> int:
        with self._lock:
            return len(self._subscribers)

    async def endpoint(self, request: Request) -> Response:
        """`GET /console/events?queue=a&queue=b`: events of the project in `X-Project-ID` (or
        the `project` parameter), for those queues or, without `queue`, all of them."""
        if self.project_of is not None:
            try:
                # The token is looked up in the store: a blocking call, kept off the loop.
                project = await run_in_threadpool(self.project_of, request.headers)
            except ZaqarError as exc:
                return _error(exc.status, exc.description)
            except StoreUnavailable as exc:  # the token is looked up in the store
                return response_for(exc)
        else:
            project = (
                request.headers.get("x-project-id")
                or request.query_params.get("project")
                or self.default_project
            )
        queues = frozenset(q for q in request.query_params.getlist("queue") if q)
        if len(queues) > MAX_FILTER_QUEUES:
            return _error(400, f"At most {MAX_FILTER_QUEUES} queue parameters.")
        if request.method == "HEAD":  # what a GET would answer, without holding a feed open
            return Response(status_code=200, media_type="text/event-stream")
        with self._lock:
            if len(self._subscribers) >= MAX_SUBSCRIBERS:
                return _error(503, "Too many live feeds are open; the console polls instead.")
            if sum(s.project == project for s in self._subscribers) >= MAX_PER_PROJECT:
                return _error(
                    503, "Too many live feeds are open for this project; the console polls instead."
                )
            sub = _Subscriber(project, queues)
            self._subscribers.add(sub)
        return StreamingResponse(
            self._stream(sub),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _stream(self, sub: _Subscriber) -> AsyncIterator[str]:
        if self.others:
            self.others.hear_other_processes()  # a live view: no need to wait until it does
        try:
            yield f"retry: {RETRY_MS}\nevent: hello\ndata: {{}}\n\n"
            deadline = sub.loop.time() + self.stream_seconds
            while (left := deadline - sub.loop.time()) > 0:
                if sub.overflowed:
                    sub.overflowed = False
                    while not sub.events.empty():
                        sub.events.get_nowait()
                    yield "event: resync\ndata: {}\n\n"
                    continue
                try:
                    event = await asyncio.wait_for(
                        sub.events.get(), timeout=min(KEEPALIVE_SECONDS, left)
                    )
                except TimeoutError:
                    yield ": keepalive\n\n"
                    continue
                yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
        finally:
            if self.others:
                self.others.stop_hearing_other_processes()
            with self._lock:
                self._subscribers.discard(sub)


def _error(status: int, description: str) -> Response:
    return JSONResponse({"title": "Live feed", "description": description}, status_code=status)
