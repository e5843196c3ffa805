"""Signing in from the console when the server requires credentials, and what a reader sees.

The server here is the real app with authentication required: the page exchanges a key id
and secret for a token (`POST /v2/auth/tokens`) and sends it as `X-Auth-Token`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from deadletter.api.app import build_app
from deadletter.api.options import AppOptions
from deadletter.auth.credentials import MasterKey
from deadletter.engine.credentials import Authority
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.console.conftest import CLIENT_ID, Api, screenshot
from tests.support.servers import serving


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[tuple[str, Api, tuple[str, str]]]:
    """A server with credentials required, an admin's API client and a reader's key."""
    store = open_store(f"sqlite:///{tmp_path / 'gated.db'}")
    engine = Engine(store)
    authority = Authority(engine, MasterKey.generate())
    admin, admin_secret = authority.create("123456789012", "admin")
    reader, reader_secret = authority.create("123456789012", "reader")
    app = build_app(engine, AppOptions(authority=authority))
    try:
        with serving(app) as url:
            api = Api(url)
            api.http.headers["X-Auth-Token"] = f"{admin.key_id}:{admin_secret}"
            yield url, api, (reader.key_id, reader_secret)
            api.http.close()
    finally:
        store.close()


def test_the_live_feed_needs_a_token_of_the_project(
    gated: tuple[str, Api, tuple[str, str]],
) -> None:
    url, _, (key_id, secret) = gated
    with httpx.Client(base_url=url, headers={"Client-ID": CLIENT_ID}, timeout=30) as http:
        assert http.get("/console/events").status_code == 401
        token = http.post("/v2/auth/tokens", json={"key_id": key_id, "secret": secret}).json()
        assert (token["role"], token["project"]) == ("reader", "123456789012")
        headers = {"X-Auth-Token": token["token"]}
        other = headers | {"X-Project-ID": "tenant-b"}
        assert http.get("/console/events", headers=other).status_code == 403
        with http.stream("GET", "/console/events", headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")


def test_a_401_asks_for_a_key_and_a_reader_sees_no_redrive_or_purge(
    browser: Any, gated: tuple[str, Api, tuple[str, str]]
) -> None:
    url, api, (key_id, secret) = gated
    api.queue("orders-dlq")
    api.queue("orders", _max_claim_count=1, _dead_letter_queue="orders-dlq")
    context = browser.new_context(base_url=url)
    page = context.new_page()
    try:
        page.goto("/console/")
        expect(page.locator("#sign-in")).to_be_visible()
        # A wrong secret says so and keeps the form
        page.fill("#key-id", key_id)
        page.fill("#secret", "wrong")
        page.click("#sign-in button[type=submit]")
        expect(page.locator("#sign-in .error")).to_be_visible()
        screenshot(page, "sign-in")
        # The right one opens the console with the token in the tab's sessionStorage
        page.fill("#secret", secret)
        page.click("#sign-in button[type=submit]")
        expect(page.locator("#queues tr[data-queue='orders']")).to_have_count(1)
        expect(page.locator("#who")).to_contain_text("reader")
        assert page.evaluate("sessionStorage.getItem('deadletter.token')").startswith("dl")
        assert page.evaluate("document.cookie") == ""
        # A reader browses the DLQ but is offered no redrive, purge or delete
        page.goto("/console/#/dlq/orders-dlq")
        expect(page.locator("#dead-letters")).to_be_visible()
        expect(page.locator("#redrive-button")).to_have_count(0)
        expect(page.locator("#purge")).to_have_count(0)
        expect(page.locator("#delete-selected")).to_have_count(0)
    finally:
        context.close()
