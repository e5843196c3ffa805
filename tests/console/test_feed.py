"""The live feed and the shipped files, without a browser."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any

import httpx

from tests.console.conftest import CLIENT_ID, Api
from tests.console.test_dead_letter_filters import failures
from tests.console.test_pages import DLQ


def events(stream: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    kind, data = "message", ""
    for line in stream.iter_lines():
        if line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line:
            if data:
                yield kind, json.loads(data)
            kind, data = "message", ""


def test_the_feed_carries_one_projects_events_for_the_queues_asked(server: str, api: Api) -> None:
    other = httpx.Client(
        base_url=server, headers={"Client-ID": CLIENT_ID, "X-Project-ID": "other"}, timeout=30
    )
    with (
        other,
        httpx.Client(base_url=server, timeout=30) as watcher,
        watcher.stream(
            "GET", "/console/events", params={"queue": "orders"}, headers={"X-Project-ID": "other"}
        ) as stream,
    ):
        assert stream.headers["content-type"].startswith("text/event-stream")
        feed = events(stream)
        assert next(feed)[0] == "hello"
        # Given sends to the same queue name in the default project and to another queue
        api.send("orders", {"n": "default project"})
        other.post("/v2/queues/audit/messages", json={"messages": [{"body": 1}]})
        # When the watched project's queue gets one
        other.post("/v2/queues/orders/messages", json={"messages": [{"body": 2}]})
        # I expect only that one
        kind, event = next(feed)
        assert (kind, event) == ("sent", {"type": "sent", "queue": "orders", "count": 1})


def test_the_page_loads_only_files_of_the_package_under_a_strict_policy(server: str) -> None:
    static = resources.files("deadletter.api.console") / "static"
    index = (static / "index.html").read_text()
    scripts = [p for p in (static / "js").iterdir() if p.name.endswith(".js")]
    texts = [index, (static / "console.css").read_text(), *(p.read_text() for p in scripts)]
    # No CDN: nothing is fetched from another origin
    assert not any(re.search(r"(src|href)=\"(https?:)?//", t) for t in texts)
    assert not any(re.search(r"from \"(https?:)?//", t) for t in texts)
    # Every module an import names is shipped
    names = {p.name for p in scripts}
    for text in texts:
        for imported in re.findall(r'from "\./([\w.]+)"', text):
            assert imported in names, imported
    with httpx.Client(base_url=server) as http:
        page = http.get("/console/")
        assert page.status_code == 200
        assert "default-src 'self'" in page.headers["content-security-policy"]
        script = http.get("/console/static/js/app.js")
        assert script.status_code == 200
        assert "javascript" in script.headers["content-type"]
        assert http.get("/console", follow_redirects=False).headers["location"] == "/console/"


def test_the_feed_announces_a_dlqs_archive_restore_and_discard(server: str, api: Api) -> None:
    failures(api)
    dead = f"/v2/queues/{DLQ}/dead_letters"
    with (
        httpx.Client(base_url=server, timeout=30) as watcher,
        watcher.stream("GET", "/console/events", params={"queue": DLQ}) as stream,
    ):
        feed = events(stream)
        assert next(feed)[0] == "hello"
        api.request("POST", f"{dead}/archive", json={"error_class": "KeyError"})
        api.request("POST", f"{dead}/restore", json={})
        api.request("POST", f"{dead}/discard", json={"error_class": "ValueError", "why": "stale"})
        heard = []
        for kind, event in feed:
            if kind != "available":
                heard.append((kind, event["count"]))
            if len(heard) == 3:
                break
        assert heard == [("archived", 2), ("restored", 2), ("discarded", 2)]
