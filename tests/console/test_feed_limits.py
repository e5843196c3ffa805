"""The live feed's limits: one project's share of the feeds, and the token looked up off the
event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from deadletter.api.console.feed import MAX_PER_PROJECT, MAX_SUBSCRIBERS, Feed

T = TypeVar("T")


def run_apart(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on an event loop of its own thread: the browser tests beside these
    keep Playwright's loop running in the main thread, where asyncio.run refuses to start."""
    out: list[T] = []
    thread = threading.Thread(target=lambda: out.append(asyncio.run(coroutine)))
    thread.start()
    thread.join()
    (result,) = out
    return result


def request(project: str) -> Request:
    headers = [(b"x-project-id", project.encode())]
    return Request({"type": "http", "method": "GET", "path": "/console/events",
                    "headers": headers, "query_string": b""})  # fmt: skip


async def open_feeds(feed: Feed, projects: list[str]) -> list[int]:
    answers: list[Response] = [await feed.endpoint(request(p)) for p in projects]
    return [a.status_code for a in answers]


def test_one_project_cannot_hold_every_feed() -> None:
    # Given a project that opens as many feeds as it may, and one more
    feed = Feed("default")
    statuses = run_apart(open_feeds(feed, ["greedy"] * (MAX_PER_PROJECT + 1) + ["other"]))
    # I expect the one more refused, and another project still served
    assert statuses == [200] * MAX_PER_PROJECT + [503, 200]
    assert feed.subscriber_count == MAX_PER_PROJECT + 1


def test_the_server_wide_cap_still_holds() -> None:
    feed = Feed("default")
    projects = [f"p{i}" for i in range(MAX_SUBSCRIBERS + 1)]
    statuses = run_apart(open_feeds(feed, projects))
    assert statuses == [200] * MAX_SUBSCRIBERS + [503]


def test_the_token_is_looked_up_off_the_event_loop() -> None:
    seen: list[int] = []

    def project_of(headers: Mapping[str, str]) -> str:  # a store lookup in the server
        seen.append(threading.get_ident())
        return "alpha"

    async def main() -> tuple[int, int]:
        feed = Feed("default", project_of)
        answer = await feed.endpoint(request("ignored"))
        return answer.status_code, threading.get_ident()

    status, loop_thread = run_apart(main())
    assert status == 200 and len(seen) == 1 and seen[0] != loop_thread


def test_a_head_answers_at_once_and_holds_no_feed() -> None:
    feed = Feed("default")

    async def heads() -> list[int]:
        answers = []
        for _ in range(MAX_PER_PROJECT + 1):
            scope = {**request("p").scope, "method": "HEAD"}
            answers.append((await feed.endpoint(Request(scope))).status_code)
        return answers

    assert run_apart(heads()) == [200] * (MAX_PER_PROJECT + 1)
    assert feed.subscriber_count == 0
