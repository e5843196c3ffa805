"""The apps' listeners on an engine, registered with it once, however many apps are built on it.

An app listens to its engine (its metrics, its console's feed, the wake-ups of its long polls
and subscribed sockets). Each app registering its own would leave every app ever built on an
engine registered with it, heard on every event long after the app is gone. Instead the
engine gets one `AppListeners` the first time an app is built on it (`for_engine`); each app
adds its listeners there, held only as long as the app holds them, and each event reaches
each live app's listeners once.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from deadletter.engine import Engine, EngineListener

# Every hook of the engine's listeners; a hook added there is passed on without a word here.
HOOKS = tuple(name for name in vars(EngineListener) if not name.startswith("_"))

_BY_ENGINE: weakref.WeakKeyDictionary[Engine, AppListeners] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class AppListeners(EngineListener):
    """One listener of an engine standing for the listeners of every app built on it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Replaced whole under the lock, read without it: every event reads this tuple, and
        # only an add or a listener found gone takes the lock.
        self._listeners: tuple[weakref.ref[EngineListener], ...] = ()

    def add(self, listener: EngineListener) -> None:
        """Hear the engine's events in `listener` for as long as something else holds it;
        once only, however often it is added."""
        with self._lock:
            if all(ref() is not listener for ref in self._listeners):
                self._listeners = (*self._listeners, weakref.ref(listener))

    def live(self) -> list[EngineListener]:
        """The listeners still held, in the order they were added."""
        found = [ref() for ref in self._listeners]
        if None in found:
            self._forget_gone()
        return [listener for listener in found if listener is not None]

    def _forget_gone(self) -> None:
        with self._lock:
            self._listeners = tuple(ref for ref in self._listeners if ref() is not None)

    def _pass_on(self, hook: str, args: tuple[Any, ...]) -> None:
        """Call `hook` on every live listener; one that raises does not keep the others
        from it, and the first error is raised after (the engine logs and counts it)."""
        error: Exception | None = None
        for listener in self.live():
            try:
                getattr(listener, hook)(*args)
            except Exception as exc:
                error = error or exc
        if error is not None:
            raise error


def _hook(name: str) -> Callable[..., None]:
    def hook(self: AppListeners, *args: Any) -> None:
        self._pass_on(name, args)

    hook.__name__ = name
    return hook


for _name in HOOKS:
    setattr(AppListeners, _name, _hook(_name))


def for_engine(engine: Engine) -> AppListeners:
    """The engine's `AppListeners`, registered with it the first time it is asked for."""
    with _LOCK:
        found = _BY_ENGINE.get(engine)
        if found is None:
            found = _BY_ENGINE[engine] = AppListeners()
            engine.add_listener(found)
        return found
