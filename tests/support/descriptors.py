"""Every descriptor below 1,024 taken, so that the next socket a test opens is numbered past
what `select.select` accepts, as in a server that holds a thousand connections."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

SELECT_LIMIT = 1024  # FD_SETSIZE: `select.select` refuses a descriptor numbered this or more


@contextmanager
def descriptors_taken(below: int = SELECT_LIMIT) -> Iterator[None]:
    """While the block runs, every descriptor numbered below `below` is open (on /dev/null
    where it was free); the soft limit on open files raised for it if need be."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = below + 256
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"the hard limit on open files ({hard}) leaves no descriptor past {below}")
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    fillers: list[int] = []
    try:
        while not fillers or fillers[-1] < below - 1:
            fillers.append(os.open(os.devnull, os.O_RDONLY))  # always the lowest free one
        yield
    finally:
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
