"""Fixtures both faces' tests share."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest

from deadletter.storage.base import Store, Transaction


@pytest.fixture
def counted(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every transaction a request opens from now on: "write" or "read" (the background
    worker's sweeps, which run beside the requests, are not counted)."""
    opened: list[str] = []

    def counting(kind: str, original: Callable[[], AbstractContextManager[Transaction]]) -> Any:
        def open_one() -> AbstractContextManager[Transaction]:
            if threading.current_thread().name != "deadletter-worker":
                opened.append(kind)
            return original()

        return open_one

    monkeypatch.setattr(store, "transaction", counting("write", store.transaction))
    monkeypatch.setattr(store, "read", counting("read", store.read))
    return opened
