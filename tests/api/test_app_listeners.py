"""Apps listen to their engine through one registration, however many are built on it: each
event reaches each live app once, and an app that is gone is no longer told."""

from __future__ import annotations

import gc

import anyio
import httpx
import pytest
from starlette.applications import Starlette

from deadletter.api.app import build_app
from deadletter.api.listeners import HOOKS, AppListeners, for_engine
from deadletter.api.metrics import Metrics
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener

pytestmark = pytest.mark.one_store

CLIENT = {"Client-ID": "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"}


def sent_total(app: Starlette) -> float:
    """The app's own count of messages sent, from its /metrics."""

    async def scrape() -> str:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return (await c.get("/metrics")).text

    for line in anyio.run(scrape).splitlines():
        if line.startswith("deadletter_messages_sent_total{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def post(app: Starlette, count: int) -> None:
    async def go() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            messages = {"messages": [{"body": i} for i in range(count)]}
            answer = await c.post("/v2/queues/q/messages", headers=CLIENT, json=messages)
            assert answer.status_code == 201, answer.text

    anyio.run(go)


def test_two_apps_on_one_engine_register_once_and_count_each_event_once(engine: Engine) -> None:
    # Given an engine and its listeners before any app
    before = list(engine.listeners)
    # When two apps are built on it
    first, second = build_app(engine), build_app(engine)
    # I expect one registration more, not one per app
    added = [listener for listener in engine.listeners if listener not in before]
    assert len(added) == 1 and isinstance(added[0], AppListeners)
    # and three messages sent through one app to be counted three times by each, not six
    post(first, 3)
    assert (sent_total(first), sent_total(second)) == (3.0, 3.0)


def test_an_app_that_is_gone_is_no_longer_told(engine: Engine) -> None:
    # Given an app that is built and dropped, then another
    build_app(engine)
    gc.collect()
    kept = build_app(engine)
    listeners = for_engine(engine)
    # I expect only the kept app's listeners to be heard
    metrics = [listener for listener in listeners.live() if isinstance(listener, Metrics)]
    assert metrics == [kept.state.metrics]
    post(kept, 2)
    assert sent_total(kept) == 2.0


def test_a_listener_added_twice_hears_once_and_every_hook_is_passed_on(engine: Engine) -> None:
    heard: list[str] = []

    class Every(EngineListener):
        pass

    every = Every()
    for name in HOOKS:
        setattr(every, name, lambda *args, name=name: heard.append(name))
    listeners = for_engine(engine)
    listeners.add(every)
    listeners.add(every)
    for name in HOOKS:
        getattr(listeners, name)("p", "q", 1)
    assert heard == list(HOOKS)
    assert for_engine(engine) is listeners
