"""Signing in from the console when the server asks for a token (401), and what a reader sees.

Credentials are served here by a stand-in in front of the real app that speaks the token
exchange as docs/security.md describes it (`POST /v2/auth/tokens` → a token for
`X-Auth-Token`), so the page's side is checked without depending on how the server stores keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from starlette.types import ASGIApp, Receive, Scope, Send

from deadletter.api.app import build_app
from deadletter.api.options import AppOptions
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.console.conftest import Api, screenshot
from tests.support.servers import serving

TOKEN = "dlt1.reader-token"


class TokenGate:
    """Refuses /v2 without the token (401); exchanges key `reader-key`/`s3cret` for it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen_tokens: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v2"):
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/v2/auth/tokens" and scope["method"] == "POST":
            message = await receive()
            doc = json.loads(message.get("body", b"") or b"{}")
            if doc == {"key_id": "reader-key", "secret": "s3cret"}:
                await _json(send, 201, {"token": TOKEN, "role": "reader", "expires_in": 3600})
            else:
                await _json(send, 401, {"title": "Unauthorized", "description": "bad secret"})
            return
        token = dict(scope["headers"]).get(b"x-auth-token", b"").decode()
        if token != TOKEN:
            await _json(send, 401, {"title": "Unauthorized", "description": "token required"})
            return
        self.seen_tokens.append(token)
        await self.app(scope, receive, send)


async def _json(send: Send, status: int, doc: dict[str, Any]) -> None:
    body = json.dumps(doc).encode()
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[tuple[str, Api]]:
    store = open_store(f"sqlite:///{tmp_path / 'gated.db'}")
    app = build_app(Engine(store), AppOptions())
    try:
        with serving(app) as inner, serving(TokenGate(app), lifespan="off") as outer:
            api = Api(inner)
            yield outer, api
            api.http.close()
    finally:
        store.close()


def test_a_401_asks_for_a_key_and_a_reader_sees_no_redrive_or_purge(
    browser: Any, gated: tuple[str, Api]
) -> None:
    url, api = gated
    api.queue("orders-dlq")
    api.queue("orders", _max_claim_count=1, _dead_letter_queue="orders-dlq")
    context = browser.new_context(base_url=url)
    page = context.new_page()
    try:
        page.goto("/console/")
        expect(page.locator("#sign-in")).to_be_visible()
        # A wrong secret says so and keeps the form
        page.fill("#key-id", "reader-key")
        page.fill("#secret", "wrong")
        page.click("#sign-in button[type=submit]")
        expect(page.locator("#sign-in .error")).to_contain_text("bad secret")
        screenshot(page, "sign-in")
        # The right one opens the console with the token in the tab's sessionStorage
        page.fill("#secret", "s3cret")
        page.click("#sign-in button[type=submit]")
        expect(page.locator("#queues tr[data-queue='orders']")).to_have_count(1)
        expect(page.locator("#who")).to_contain_text("reader")
        assert page.evaluate("sessionStorage.getItem('deadletter.token')") == TOKEN
        assert page.evaluate("document.cookie") == ""
        # A reader browses the DLQ but is offered no redrive, purge or delete
        page.goto("/console/#/dlq/orders-dlq")
        expect(page.locator("#dead-letters")).to_be_visible()
        expect(page.locator("#redrive-button")).to_have_count(0)
        expect(page.locator("#purge")).to_have_count(0)
        expect(page.locator("#delete-selected")).to_have_count(0)
    finally:
        context.close()
