"""The systems under test: install, start and stop each one, and hand out its driver."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.peers.drivers import Driver, RabbitDriver, SqsDriver, ZaqarDriver
from bench.proc import pids_named

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "bench" / "work"
# The checkout's own virtualenv, else the one running the bench (a worktree shares one).
VENV = ROOT / ".venv" if (ROOT / ".venv").exists() else Path(sys.executable).parents[1]
VENV_BIN = VENV / "bin"
POSTGRES_ADMIN = os.environ.get("DEADLETTER_BENCH_POSTGRES", "postgresql://127.0.0.1:5432/test")

ZAQAR_CONF = """[DEFAULT]
admin_mode = True
pooling = False
auth_strategy =

[drivers]
transport = wsgi
message_store = redis
management_store = redis

[drivers:message_store:redis]
uri = redis://127.0.0.1:6379

[drivers:management_store:redis]
uri = redis://127.0.0.1:6379
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def ensure_venv(name: str, packages: list[str], probe: str) -> Path:
    """A virtual environment under bench/work holding `packages`; skipped when `probe` exists."""
    venv = WORK / name
    if (venv / "bin" / probe).exists():
        return venv
    log(f"installing {' '.join(packages)} into {venv}")
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", *packages],
        check=True,
    )
    return venv


def pip_version(venv: Path, package: str) -> str:
    out = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            f"import importlib.metadata as m; print(m.version({package!r}))",
        ],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "?"


class System:
    """One system: `start` before the runs, `fresh` for each run, `stop` at the end."""

    name = ""
    kind = ""  # "deadletter" or "peer"

    def start(self) -> None:
        pass

    def fresh(self) -> Driver:
        raise NotImplementedError

    def end_run(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return "?"

    def server_pid(self) -> int | None:
        return None


class Process:
    """A server we started, in its own process group so stopping it stops its workers."""

    def __init__(self, argv: list[str], logfile: Path, env: dict[str, str] | None = None) -> None:
        logfile.parent.mkdir(parents=True, exist_ok=True)
        self.log = logfile.open("ab")
        self.popen = subprocess.Popen(
            argv,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
            cwd=str(WORK),
        )

    def wait_http(self, url: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                code = self.popen.returncode
                raise RuntimeError(f"server exited with {code}: see {self.log.name}")
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(url, timeout=2)
                return
            time.sleep(0.2)
        raise RuntimeError(f"server did not answer at {url} within {timeout} s")

    def stop(self) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(10)
        self.log.close()


class Deadletter(System):
    kind = "deadletter"

    def __init__(self, face: str, store: str, workers: int = 1, src: Path = ROOT) -> None:
        """`src` is the source tree whose code the server runs (another checkout's, to
        compare two versions in one run)."""
        self.face, self.store, self.workers, self.src = face, store, workers, src
        self.name = f"deadletter-{face}-{store}" + (f"-w{workers}" if workers > 1 else "")
        self.proc: Process | None = None
        self.dbname: str | None = None
        self.dbfile: Path | None = None
        self.env: dict[str, str] = {}  # for the server, besides PYTHONPATH

    def command(self) -> list[str]:
        """The server's command, before its flags."""
        return serve_command()

    def _db_url(self) -> str:
        if self.store == "sqlite":
            path = WORK / "deadletter" / f"{uuid.uuid4().hex[:8]}.db"
            path.parent.mkdir(parents=True, exist_ok=True)
            self.dbfile = path
            return f"sqlite:///{path}"
        import psycopg

        self.dbname = f"bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.dbname}"')
        return POSTGRES_ADMIN.rsplit("/", 1)[0] + "/" + self.dbname

    def fresh(self) -> Driver:
        self.end_run()
        port = free_port()
        url = self._db_url()
        self.proc = Process(
            # Warnings only: an access-log line per request would be measured too.
            [*self.command(), "--port", str(port), "--db", url, "--log-level", "warning"]
            + (["--workers", str(self.workers)] if self.workers > 1 else []),
            WORK / "logs" / f"{self.name}.log",
            # This checkout's code (or `src`'s), whichever virtualenv runs it.
            env={"PYTHONPATH": os.pathsep.join([str(self.src / "src"), str(ROOT)]), **self.env},
        )
        base = f"http://127.0.0.1:{port}"
        self.proc.wait_http(f"{base}/v2")
        if self.face in ("zaqar", "zaqar-ack"):
            return ZaqarDriver(
                base,
                None,
                per_message_release=True,
                native_redrive=True,
                ack_on_claim=self.face == "zaqar-ack",
            )
        return SqsDriver(base, native_redrive=True)

    def server_pid(self) -> int | None:
        return self.proc.popen.pid if self.proc else None

    def end_run(self) -> None:
        if self.proc:
            self.proc.stop()
            self.proc = None
        if self.dbfile:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.dbfile}{suffix}").unlink(missing_ok=True)
            self.dbfile = None
        if self.dbname:
            import psycopg

            with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)')
            self.dbname = None

    def stop(self) -> None:
        self.end_run()

    def version(self) -> str:
        return pip_version(VENV, "deadletter")


def serve_command() -> list[str]:
    """`deadletter serve`, or the bench's own composition of the same parts if the CLI lacks it."""
    probe = subprocess.run(
        [str(VENV_BIN / "deadletter"), "serve", "--help"], capture_output=True, text=True
    )
    if probe.returncode == 0 and "--db" in probe.stdout:
        return [str(VENV_BIN / "deadletter"), "serve"]
    log("`deadletter serve` is not available: serving through bench.peers.serve_fallback")
    return [str(VENV_BIN / "python"), "-m", "bench.peers.serve_fallback"]


class Rabbit(System):
    name, kind = "rabbitmq", "peer"

    def __init__(self) -> None:
        self.driver = RabbitDriver(shovel=shovel_enabled())

    def fresh(self) -> Driver:
        self.driver.notes = []
        if self.driver.redrive_mode != "shovel":
            self.driver.notes.append(
                "rabbitmq_shovel not enabled (rabbitmq-plugins enable rabbitmq_shovel): "
                "W3 is client-side"
            )
        return self.driver

    def server_pid(self) -> int | None:
        """The broker's Erlang VM, when it runs on this machine (for its CPU time)."""
        return next(iter(pids_named("beam.smp")), None)

    def version(self) -> str:
        try:
            return self.driver.version()
        except Exception as exc:
            return f"unreachable ({exc})"


def shovel_enabled() -> bool:
    """Whether the local broker runs the shovel plugin, RabbitMQ's own way to move a queue."""
    try:
        out = subprocess.run(
            ["rabbitmq-plugins", "list", "--enabled", "--minimal"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "rabbitmq_shovel" in out.split()


class Zaqar(System):
    name, kind = "zaqar", "peer"

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.proc: Process | None = None
        self.base = ""

    def start(self) -> None:
        venv = ensure_venv("zaqar-venv", ["zaqar", "gunicorn", "redis"], "gunicorn")
        home = WORK / "zaqar-home"
        (home / ".zaqar").mkdir(parents=True, exist_ok=True)
        (home / ".zaqar" / "zaqar.conf").write_text(ZAQAR_CONF)
        port = free_port()
        self.proc = Process(
            [
                str(venv / "bin" / "gunicorn"),
                "-w",
                str(self.workers),
                "-b",
                f"127.0.0.1:{port}",
                "zaqar.transport.wsgi.app:app",
            ],
            WORK / "logs" / "zaqar.log",
            env={"HOME": str(home)},
        )
        self.base = f"http://127.0.0.1:{port}"
        self.proc.wait_http(f"{self.base}/v2")

    def fresh(self) -> Driver:
        return ZaqarDriver(self.base, "bench", per_message_release=False, native_redrive=False)

    def stop(self) -> None:
        if self.proc:
            self.proc.stop()
            self.proc = None
        # Zaqar leaves a deleted queue's claim set and rank counter in Redis: remove ours (the
        # benchmark's project, queues named bench-*).
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            keys = subprocess.run(
                ["redis-cli", "-h", "127.0.0.1", "--scan", "--pattern", "bench.bench-*"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.split()
            for i in range(0, len(keys), 100):
                subprocess.run(
                    ["redis-cli", "-h", "127.0.0.1", "DEL", *keys[i : i + 100]],
                    capture_output=True,
                    timeout=30,
                )

    def version(self) -> str:
        return pip_version(WORK / "zaqar-venv", "zaqar")


class Moto(System):
    name, kind = "moto", "peer"

    def __init__(self) -> None:
        self.proc: Process | None = None
        self.base = ""

    def start(self) -> None:
        venv = ensure_venv("moto-venv", ["moto[server]"], "moto_server")
        port = free_port()
        self.proc = Process(
            [str(venv / "bin" / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
            WORK / "logs" / "moto.log",
        )
        self.base = f"http://127.0.0.1:{port}"
        self.proc.wait_http(f"{self.base}/")

    def fresh(self) -> Driver:
        d = SqsDriver(self.base, native_redrive=False)
        d.notes.append("no StartMessageMoveTask: W3 is client-side")
        return d

    def stop(self) -> None:
        if self.proc:
            self.proc.stop()
            self.proc = None

    def version(self) -> str:
        return pip_version(WORK / "moto-venv", "moto")


ALL = [
    "deadletter-zaqar-sqlite",
    "deadletter-sqs-sqlite",
    "deadletter-zaqar-postgres",
    "deadletter-sqs-postgres",
    "deadletter-zaqar-postgres-w2",
    "deadletter-zaqar-ack-sqlite",
    "deadletter-zaqar-ack-postgres",
    "rabbitmq",
    "zaqar",
    "moto",
]


BASE_SUFFIX = "-base"


def make(name: str, cores: int, base: Path | None = None) -> System:
    """The system `name` names; a deadletter system whose name ends in `BASE_SUFFIX` runs the
    code of the checkout `base` instead of this one's."""
    factories: dict[str, Callable[[], System]] = {
        "rabbitmq": Rabbit,
        "zaqar": lambda: Zaqar(cores),
        "moto": Moto,
    }
    if name.startswith("deadletter-"):
        src = ROOT
        if name.endswith(BASE_SUFFIX):
            assert base is not None, f"{name} needs --base"
            src = base
        face, _, rest = name.removesuffix(BASE_SUFFIX).removeprefix("deadletter-").partition("-")
        if rest.startswith("ack-"):  # the Zaqar face, acknowledging with the next claim
            face, rest = f"{face}-ack", rest.removeprefix("ack-")
        store, *workers = rest.split("-")
        system = Deadletter(face, store, int(workers[0][1:]) if workers else 1, src=src)
        system.name = name
        return system
    return factories[name]()
