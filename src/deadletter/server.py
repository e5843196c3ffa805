"""The server process: the store, the engine, its background worker and uvicorn on one port.

With `--workers N` (PostgreSQL only) uvicorn's supervisor binds the port and starts N worker
processes that accept on it; each builds its own store, engine, background worker and app
from the configuration the supervisor leaves in its environment (`worker_app`). The database
keeps every rule that spans processes (row locks, SKIP LOCKED sweeps, task rows locked per
step), and LISTEN/NOTIFY wakes a long poll in one process for a send handled by another.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import signal
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from uvicorn.supervisors import Multiprocess

from deadletter.adapters.webhooks import HttpxSender
from deadletter.api.app import AppOptions, Background, Limits, build_app
from deadletter.api.http_head import BoundedHttpToolsProtocol
from deadletter.auth.credentials import (
    MASTER_KEY_ENV,
    Credential,
    MasterKey,
    load_master_key,
    write_key_file,
)
from deadletter.auth.errors import MasterKeyError
from deadletter.config import (
    CONFIG_ENV,
    ConfigError,
    ServerConfig,
    config_from_json,
    config_to_json,
    redacted,
    sqlite_file,
)
from deadletter.engine.credentials import Authority, Role, reseal_all
from deadletter.engine.deliveries import Deliveries
from deadletter.engine.destinations import Destinations
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.logs import configure_logging
from deadletter.storage import open_store
from deadletter.storage.base import Store

log = logging.getLogger(__name__)


class _Server(uvicorn.Server):
    """uvicorn re-raises SIGTERM/SIGINT once it has shut down, which would kill the process
    before the store is closed; here the signal only starts the graceful shutdown."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # uvicorn says where it listens only for a socket it bound itself.
        if self.started and sockets is not None:
            log.info(f"listening on {_url(self.config)} (Ctrl+C stops)")

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


def check_store(config: ServerConfig) -> None:
    """ConfigError, in one line, for a `--db` the server cannot use: a scheme no backend takes,
    a directory that does not exist, a database that does not exist or refuses the
    connection, a file that is read-only or no database. Said before anything starts, in place
    of a driver's traceback (or, for PostgreSQL, its pool's timeout ten seconds later)."""
    config.check_db()
    url = config.database_url
    if sqlite_file(url) is None and url.startswith(("postgresql://", "postgres://")):
        import psycopg

        try:
            psycopg.connect(url, connect_timeout=5).close()
        except psycopg.Error as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise ConfigError(f"--db {redacted(url)}: {reason}") from None
    if config.uses_data_dir:
        config.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        open_store(url).close()  # migrates (a file that is no database fails here)
        database = sqlite_file(url)
        if database is not None:
            _check_writable(database)
    except Exception as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ConfigError(f"--db {redacted(url)}: {reason}") from None


def _check_writable(database: Path) -> None:
    """sqlite3.OperationalError if the file takes no write. Opening it proves nothing once it
    is migrated (nothing is written then), and a permission check proves nothing for root."""
    conn = sqlite3.connect(database, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.execute("CREATE TABLE deadletter_write_probe (x INTEGER)")
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def run(config: ServerConfig) -> None:
    """Serve until SIGTERM or SIGINT; uvicorn then finishes in-flight requests, the lifespan
    stops the worker, and the store is closed (every acknowledged write is already committed)."""
    configure_logging(config.log_level, config.log_format, access_log=config.access_log)
    config.check_workers()
    open_files = raise_open_files_limit()  # before the workers start: they inherit it
    auth_required = config.auth_required
    # The port first: a busy one is said before anything starts, not after uvicorn's startup.
    sock = listen(config.host, config.port)
    try:
        check_store(config)  # creates the data directory when the database is in it
        if config.workers > 1:
            _run_workers(config, sock)
            return
        store = open_store(config.database_url)
        try:
            app = _app(config, store, auth_required)
            server = _Server(uvicorn.Config(app, **_uvicorn_options(config)))
            log.info(
                "starting",
                extra={
                    "host": config.host,
                    "port": config.port,
                    "store": redacted(store.url),
                    "open_files": open_files,
                },
            )
            server.run(sockets=[sock])
        finally:
            store.close()
            log.info("stopped")
    finally:
        sock.close()


# Where the hard limit on open files is unlimited: Linux's default ceiling (fs.nr_open).
OPEN_FILES_CEILING = 1 << 20


def raise_open_files_limit() -> int:
    """The soft limit on open files raised to the hard one, as Go's runtime raises it at
    start; the limit now. Every client connection, waiting long poll and database connection
    is a descriptor, and at the soft limit a shell often gives (1,024) one tenant's long polls
    would take every one: the next connection refused, another project's request unanswered."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES_CEILING if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (OSError, ValueError):  # a ceiling below the hard limit: keep what we have
            return soft
        return wanted
    return soft


def listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound as uvicorn binds one; ConfigError when the
    address cannot be had, a port in use saying how to choose another."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} is in use; choose another with --port or DEADLETTER_PORT"
            ) from None
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror}; choose another --host or --port"
        ) from None
    sock.set_inheritable(True)
    return sock


def _url(config: uvicorn.Config) -> str:
    scheme = "https" if config.ssl_certfile else "http"
    host = f"[{config.host}]" if ":" in config.host else config.host
    return f"{scheme}://{host}:{config.port}"


def _app(
    config: ServerConfig, store: Store, auth_required: bool, first: Sequence[Background] = ()
) -> Starlette:
    """The app of one process on `store`; `first` starts before its worker, stops after."""
    engine = Engine(store, queue_quota=config.max_queues or None)
    worker = Worker(engine, sweep_interval=config.sweep_interval)
    authority = None
    if auth_required:
        authority = Authority(
            engine, load_master_key(config.key_file), config.signed_url_max_lifetime
        )
        log.info("auth is required")
    elif config.loopback:
        log.info("auth is off", extra={"host": config.host})
    else:
        log.warning("auth is off on a non-loopback host (--insecure-no-auth)")
    if config.subscription_confirmation:
        engine.subscriptions.require_confirmation = True
        engine.subscriptions.signer = authority.sign if authority is not None else None
    destinations = Destinations(config.webhook_networks)
    engine.subscriptions.destinations = destinations
    options = AppOptions(
        test_mode=config.test_mode,
        authority=authority,
        region=config.region,
        metrics_queues=config.metrics_queues,
    )
    limits = Limits(zaqar_body=config.max_body_bytes, sqs_body=config.max_body_bytes)
    background = [*first, worker, Deliveries(engine, HttpxSender(destinations))]
    return build_app(engine, options, background=background, limits=limits)


# The HTTP server that costs the least CPU per request on both faces (`./dev bench framework`,
# docs/benchmarks.md): uvicorn with httptools and uvloop, named so that a missing one fails
# at start instead of falling back to the slower h11 and asyncio. Its protocol bounds each
# request's head (docs/limits.md), which uvicorn's own does not.
HTTP_PARSER = BoundedHttpToolsProtocol
EVENT_LOOP = "uvloop"


def _uvicorn_options(config: ServerConfig) -> dict[str, Any]:
    return {
        "http": HTTP_PARSER,
        "loop": EVENT_LOOP,
        "host": config.host,
        "port": config.port,
        "log_config": None,
        "log_level": config.log_level.lower(),
        "access_log": config.access_log,
        "timeout_graceful_shutdown": 30,
        "ssl_certfile": config.ssl_certfile,
        "ssl_keyfile": config.ssl_keyfile,
    }


def _run_workers(config: ServerConfig, sock: socket.socket) -> None:
    """Supervise `config.workers` processes that serve the bound `sock` (uvicorn's
    Multiprocess: SIGTERM or SIGINT stops each gracefully, a dead one is replaced)."""
    os.environ[CONFIG_ENV] = config_to_json(config)
    os.environ[SUPERVISOR_ENV] = str(os.getpid())
    settings = uvicorn.Config(
        f"{__name__}:worker_app", factory=True, workers=config.workers, **_uvicorn_options(config)
    )
    log.info(
        "starting",
        extra={
            "host": config.host,
            "port": config.port,
            "store": redacted(config.database_url),
            "workers": config.workers,
        },
    )
    try:
        Multiprocess(settings, sockets=[sock]).run()
    finally:
        log.info("stopped")


def worker_app() -> Starlette:
    """The app of one worker process of `--workers`, built from the supervisor's config; its
    lifespan closes the store last, after the background worker has stopped."""
    config = config_from_json(os.environ[CONFIG_ENV])
    configure_logging(config.log_level, config.log_format, access_log=config.access_log)
    orphaned = _stop_when_orphaned(int(os.environ[SUPERVISOR_ENV]))
    store = _open_when_reachable(config.database_url, orphaned)
    return _app(config, store, config.auth_required, first=[_Closing(store)])


ORPHAN_CHECK_SECONDS = 1.0
# The supervisor's pid, left in its workers' environment: a worker that starts after the
# supervisor died has been given another parent already, and must know it is orphaned.
SUPERVISOR_ENV = "DEADLETTER_SUPERVISOR_PID"
# A worker that cannot open its store tries again after these many seconds, doubled each
# time up to the last.
STORE_RETRY_SECONDS = (0.5, 30.0)


def _open_when_reachable(url: str, stop: threading.Event) -> Store:
    """The worker's store, once the database lets it open. The supervisor opened it at start,
    so a failure here is the database's state (a restart, a failover, a dropped schema), not
    the configuration's. A worker that died of it would be replaced by uvicorn's supervisor
    within seconds, again and again for as long as the database stays away; so it waits
    instead, backing off, and serves once the database is back.

    uvicorn has not started serving yet, so its handlers of SIGTERM and SIGINT would only
    note a stop for later: while waiting, a stop (the supervisor's, or `stop` set once the
    supervisor is gone) ends the wait and the process instead. So does a stop that uvicorn
    noted while this process was still loading the app, before the wait began."""
    stopping = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _STOP_SIGNALS}
    if any(_noted_a_stop(handler) for handler in stopping.values()):
        stop.set()
    try:
        delay, longest = STORE_RETRY_SECONDS
        while not stop.is_set():
            try:
                store = open_store(url)
            except Exception as exc:
                log.warning(
                    "cannot open the store; retrying",
                    extra={"store": redacted(url), "error": str(exc), "retry_in": delay},
                )
                stop.wait(delay)
                delay = min(delay * 2, longest)
                continue
            if not stop.is_set():
                return store
            store.close()
        log.info("stopped while waiting for the store")
        raise SystemExit(0)
    finally:
        for sig, handler in stopping.items():
            signal.signal(sig, handler)


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _noted_a_stop(handler: object) -> bool:
    """Whether `handler` is a uvicorn server's signal handler (`Server.handle_exit`) and that
    server has been told to stop."""
    server = getattr(handler, "__self__", None)
    return isinstance(server, uvicorn.Server) and server.should_exit


def _stop_when_orphaned(supervisor: int) -> threading.Event:
    """Stop this worker gracefully once its supervisor is gone; the event returned is set
    then. A supervisor killed outright (`kill -9`, the OOM killer) cannot stop its workers,
    and an orphaned worker would go on serving the inherited socket, so that a restarted
    `serve` could not bind the port."""
    orphaned = threading.Event()

    def watch() -> None:
        while os.getppid() == supervisor:
            time.sleep(ORPHAN_CHECK_SECONDS)
        log.warning("supervisor gone; stopping this worker", extra={"supervisor": supervisor})
        orphaned.set()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="deadletter-orphan-watch", daemon=True).start()
    return orphaned


class _Closing:
    """Closes a store when the app's lifespan ends."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def start(self) -> None:
        pass

    def stop(self) -> None:
        self._store.close()


class OfflineSetupError(Exception):
    """The database or the master key needed to act without a running server is missing."""


def create_operator_credential(config: ServerConfig, project: str) -> tuple[Credential, str]:
    """Make an operator credential directly in the database, where no server runs yet (the
    first credential of a deployment); returns it with its secret, shown once. A `--db`
    file in a directory that does not exist is refused as `serve` refuses it: made there, the
    credential would sit in a database no server opens."""
    try:
        config.check_db()
    except ConfigError as exc:
        raise OfflineSetupError(str(exc)) from None
    if config.uses_data_dir:
        config.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # the database, the key
    master = _offline_master_key(config, create=True)
    store = open_store(config.database_url)
    try:
        return Authority(Engine(store), master).create(project, Role.OPERATOR)
    finally:
        store.close()


def rotate_master_key(config: ServerConfig, new_key_file: Path) -> int:
    """Re-seal every stored secret under a new master key, written first to `new_key_file`
    (0600, never over an existing file); returns how many credentials were re-sealed.

    Offline: servers still holding the old key cannot open the re-sealed secrets, so they
    must be restarted with the new one. All or nothing: on failure the database keeps the
    old key and the new key file opens nothing.
    """
    database = sqlite_file(config.database_url)
    if database is not None and not database.exists():
        # Opening it would create an empty database and "re-seal" nothing: a mistyped path.
        raise OfflineSetupError(f"No database at {database}: nothing to re-seal.")
    old = _offline_master_key(config, create=False)
    new = MasterKey.generate()
    try:
        write_key_file(new_key_file, new)
    except (MasterKeyError, OSError) as exc:
        raise OfflineSetupError(str(exc)) from None
    store = open_store(config.database_url)
    try:
        return reseal_all(Engine(store), old, new)
    except MasterKeyError as exc:
        raise OfflineSetupError(
            f"{exc.message} Nothing was changed: the database still uses the old key;"
            f" remove {new_key_file} before trying again."
        ) from None
    finally:
        store.close()


def _offline_master_key(config: ServerConfig, create: bool) -> MasterKey:
    if config.key_file is None and not os.environ.get(MASTER_KEY_ENV):
        raise OfflineSetupError(
            f"A PostgreSQL store needs the master key: set {MASTER_KEY_ENV} or give"
            " --master-key-file."
        )
    try:
        return load_master_key(config.key_file, create=create)
    except MasterKeyError as exc:
        raise OfflineSetupError(exc.message) from None
