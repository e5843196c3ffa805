"""The server process: the store, the engine, its background worker and uvicorn on one port."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from deadletter.api.app import AppOptions, Limits, build_app
from deadletter.auth.credentials import MASTER_KEY_ENV, Credential, load_master_key
from deadletter.auth.errors import MasterKeyError
from deadletter.config import ServerConfig
from deadletter.engine.credentials import Authority, Role
from deadletter.engine.deliveries import Deliveries
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage import open_store

log = logging.getLogger("deadletter.server")

# Attributes every LogRecord has; anything else came in through `extra=` and is logged too.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line, so logs can be shipped and queried without parsing text."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key != "color_message" and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # uvicorn's loggers propagate to the root so that they are JSON too.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True


class _Server(uvicorn.Server):
    """uvicorn re-raises SIGTERM/SIGINT once it has shut down, which would kill the process
    before the store is closed; here the signal only starts the graceful shutdown."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        signals = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in signals}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def run(config: ServerConfig) -> None:
    """Serve until SIGTERM or SIGINT; uvicorn then finishes in-flight requests, the lifespan
    stops the worker, and the store is closed (every acknowledged write is already committed)."""
    configure_logging(config.log_level)
    auth_required = config.auth_required
    if config.uses_data_dir:
        config.data_dir.mkdir(parents=True, exist_ok=True)
    store = open_store(config.database_url)
    try:
        engine = Engine(store)
        worker = Worker(engine, sweep_interval=config.sweep_interval)
        authority = None
        if auth_required:
            authority = Authority(engine, load_master_key(config.key_file))
            log.info("auth is required")
        elif config.loopback:
            log.info("auth is off", extra={"host": config.host})
        else:
            log.warning("auth is off on a non-loopback host (--insecure-no-auth)")
        options = AppOptions(test_mode=config.test_mode, authority=authority)
        limits = Limits(zaqar_body=config.max_body_bytes, sqs_body=config.max_body_bytes)
        background: list[Worker | Deliveries] = [worker, Deliveries(engine)]
        app = build_app(engine, options, background=background, limits=limits)
        server = _Server(
            uvicorn.Config(
                app,
                host=config.host,
                port=config.port,
                log_config=None,
                log_level=config.log_level.lower(),
                timeout_graceful_shutdown=30,
                ssl_certfile=config.ssl_certfile,
                ssl_keyfile=config.ssl_keyfile,
            )
        )
        log.info(
            "starting",
            extra={"host": config.host, "port": config.port, "store": _redacted(store.url)},
        )
        server.run()
    finally:
        store.close()
        log.info("stopped")


def _redacted(url: str) -> str:
    """A database URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url


class OfflineSetupError(Exception):
    """The database or the master key needed to act without a running server is missing."""


def create_operator_credential(config: ServerConfig, project: str) -> tuple[Credential, str]:
    """Make an operator credential directly in the database, where no server runs yet (the
    first credential of a deployment); returns it with its secret, shown once."""
    if config.key_file is None and not os.environ.get(MASTER_KEY_ENV):
        raise OfflineSetupError(
            f"A PostgreSQL store needs the master key: set {MASTER_KEY_ENV} or give"
            " --master-key-file."
        )
    if config.uses_data_dir:
        config.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        master = load_master_key(config.key_file)
    except MasterKeyError as exc:
        raise OfflineSetupError(exc.message) from None
    store = open_store(config.database_url)
    try:
        return Authority(Engine(store), master).create(project, Role.OPERATOR)
    finally:
        store.close()
