"""A real server on a socket and Debian's Chromium driven by Playwright, for the console tests.

Playwright's own browser downloads are not used: the tests launch /usr/bin/chromium (Debian's
`chromium` package). Without it they skip with the reason, and fail under CI=true.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from deadletter.api.app import build_app
from deadletter.api.options import AppOptions
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage import open_store
from tests.services import missing
from tests.support.servers import serving

CHROMIUM = os.environ.get("DEADLETTER_CHROMIUM", "/usr/bin/chromium")
CLIENT_ID = "5b0c3f59-7d8e-4b1a-9c2d-3e4f5a6b7c8d"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"
# The screen the console is checked on (and docs/console/ is drawn at): a laptop's browser.
VIEWPORT = {"width": 1400, "height": 900}


class Api:
    """The native API over the socket, as a producer or consumer beside the page would use it."""

    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, headers={"Client-ID": CLIENT_ID}, timeout=30)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self.http.request(method, path, **kwargs)
        assert response.status_code < 400, (method, path, response.status_code, response.text)
        return response

    def queue(self, name: str, **metadata: Any) -> None:
        self.request("PUT", f"/v2/queues/{name}", json=metadata)

    def send(self, queue: str, *bodies: Any) -> list[str]:
        doc = self.request(
            "POST", f"/v2/queues/{queue}/messages", json={"messages": [{"body": b} for b in bodies]}
        ).json()
        return [href.rsplit("/", 1)[1] for href in doc["resources"]]

    def claim(self, queue: str, limit: int = 1) -> tuple[str | None, list[dict[str, Any]]]:
        r = self.request("POST", f"/v2/queues/{queue}/claims", params={"limit": limit}, json={})
        if r.status_code == 204:
            return None, []
        return r.headers["Location"].rsplit("/", 1)[1], r.json()["messages"]

    def release(self, queue: str, claim_id: str) -> None:
        self.request("DELETE", f"/v2/queues/{queue}/claims/{claim_id}")

    def reject(self, queue: str, message_id: str, claim_id: str, error: str) -> None:
        self.request(
            "POST",
            f"/v2/queues/{queue}/messages/{message_id}/dead_letter",
            params={"claim_id": claim_id},
            json={"description": "cannot process", "error": error},
        )

    def dead_letters(self, dlq: str) -> list[dict[str, Any]]:
        return list(self.request("GET", f"/v2/queues/{dlq}/dead_letters").json()["messages"])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A server like `deadletter serve`: the app and its background worker (redrives)."""
    store = open_store(f"sqlite:///{tmp_path / 'console.db'}")
    engine = Engine(store)
    app = build_app(engine, AppOptions(), background=[Worker(engine, sweep_interval=0.5)])
    try:
        with serving(app) as url:
            yield url
    finally:
        store.close()


@pytest.fixture
def api(server: str) -> Iterator[Api]:
    client = Api(server)
    yield client
    client.http.close()


# Per module, not per session: Playwright's sync API keeps an asyncio loop running on the
# thread while it is open, and a later test on the same worker that runs its own loop
# (anyio.run) would fail with "Already running asyncio in this thread".
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        missing(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed (pip install -c constraints.txt playwright)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[Any]:
    """A fresh tab; any script error on the page fails the test."""
    context = browser.new_context(base_url=server, viewport=VIEWPORT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors


def screenshot(page: Any, name: str) -> None:
    """Saved to docs/console/ only when DEADLETTER_SCREENSHOTS=1, so test runs leave no files.
    What the viewport shows, as a person opening the page sees it (not the whole page)."""
    if os.environ.get("DEADLETTER_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"))
