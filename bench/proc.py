"""CPU time of processes on this machine, read from /proc: the one reader the benchmarks share
(the server's and its workers', PostgreSQL's, a backend's, the load generator's)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def pids_named(comm: str) -> list[int]:
    """The processes of this machine whose command name is `comm` (`/proc/PID/comm`)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):  # ended meanwhile
                if (entry / "comm").read_text().strip() == comm:
                    pids.append(int(entry.name))
    return pids


def proc_stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command name (`[1]` is the parent, `[11]` and
    `[12]` the user and system ticks, `[13]` and `[14]` those of ended children waited for)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_cpu_seconds(pid: int | str) -> float:
    """User and system CPU of process `pid` so far, its children apart (OSError once it is
    gone)."""
    fields = proc_stat(pid)
    return (int(fields[11]) + int(fields[12])) / TICK


def cpu_split(pid: int) -> tuple[float, float] | None:
    """(user, system) CPU seconds of `pid` and every process below it (a server's workers, a
    JVM's Python workers); None when `pid` is gone."""
    children: dict[int, list[int]] = {}
    times: dict[int, tuple[float, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = proc_stat(entry.name)
        except (OSError, IndexError):
            continue
        me = int(entry.name)
        children.setdefault(int(fields[1]), []).append(me)
        times[me] = (int(fields[11]) / TICK, int(fields[12]) / TICK)
    if pid not in times:
        return None
    user = system = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        u, s = times.get(p, (0.0, 0.0))
        user, system = user + u, system + s
        todo += children.get(p, [])
    return user, system


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of `pid` and every process below it."""
    split = cpu_split(pid)
    return None if split is None else sum(split)


def postgres_cpu_seconds() -> float:
    """User and system CPU of every PostgreSQL process of this machine so far, with the ended
    backends the postmaster has counted (other work on the same server counts too)."""
    total = 0.0
    for pid in pids_named("postgres"):
        try:
            fields = proc_stat(pid)
            total += (int(fields[11]) + int(fields[12])) / TICK
            if Path(f"/proc/{fields[1]}/comm").read_text().strip() != "postgres":
                total += (int(fields[13]) + int(fields[14])) / TICK  # the postmaster
        except OSError:
            continue  # ended meanwhile
    return total
