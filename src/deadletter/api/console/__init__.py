"""The web console: static pages served under `/console`, talking to the public API, plus its
live feed of engine events."""

from deadletter.api.console.routes import Console

__all__ = ["Console"]
