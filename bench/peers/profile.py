"""Reading py-spy's raw (collapsed-stack) profiles of the server: where the samples went.

    python -m bench.peers.profile bench/work/profiles/<system>-w1-1.txt [...]

prints each profile's samples by layer (`by_layer`).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path


def parse_collapsed(text: str) -> list[tuple[list[str], int]]:
    """Lines of `frame;frame;...;frame count` -> (frames from root to leaf, samples)."""
    stacks = []
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if stack and count.isdigit():
            stacks.append((stack.split(";"), int(count)))
    return stacks


def _function(frame: str) -> str:
    # "claim (deadletter/engine/engine.py:120)" -> "claim (deadletter/engine/engine.py)"
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rsplit(':', 1)[0]})" if where else name


def hot_spots(text: str, prefix: str = "", top: int = 10) -> tuple[int, list[tuple[str, int]]]:
    """Total samples and the functions most often on the stack (inclusive), optionally only
    those whose frame contains `prefix` (e.g. "deadletter/")."""
    total = 0
    inclusive: Counter[str] = Counter()
    for frames, count in parse_collapsed(text):
        total += count
        seen = {_function(f) for f in frames if prefix in f}
        for fn in seen:
            inclusive[fn] += count
    return total, inclusive.most_common(top)


def self_time(text: str, top: int = 10) -> list[tuple[str, int]]:
    """The leaf functions that hold the most samples."""
    leaves: Counter[str] = Counter()
    for frames, count in parse_collapsed(text):
        leaves[_function(frames[-1])] += count
    return leaves.most_common(top)


# Leaves where a thread waits for work rather than does it: idle pool threads and the event
# loop's select.
IDLE = ("Condition.wait (threading.py)", "Runner.run (asyncio/runners.py)")


def busy(text: str) -> str:
    """The collapsed stacks without those that end waiting for work."""
    keep = [
        line
        for line in text.splitlines()
        if (stacks := parse_collapsed(line)) and _function(stacks[0][0][-1]) not in IDLE
    ]
    return "\n".join(keep)


def report(path: Path, top: int = 8) -> str:
    raw = path.read_text()
    text = busy(raw)
    total, hot = hot_spots(text, "deadletter/", top)
    lines = [f"{path.name}: {total} busy of {sum(c for _, c in parse_collapsed(raw))} samples"]
    lines += [f"  {100 * n / max(total, 1):5.1f}% incl  {fn}" for fn, n in hot]
    lines += [f"  {100 * n / max(total, 1):5.1f}% self  {fn}" for fn, n in self_time(text, top)]
    return "\n".join(lines)


# The server's layers, each by the paths of its frames: a sample counts for the layer of the
# deepest frame of its stack that one of them names (a frame of no layer, a dataclass's
# generated `__init__`, counts for the caller's).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("engine and store", ("deadletter/engine/", "deadletter/storage/")),
    ("hand-over (in_thread, on_loop)", ("deadletter/api/threads.py", "threading.py", "queue.py")),
    (
        "face: parsing, handler, answer",
        (
            "deadletter/api/zaqar/",
            "deadletter/api/sqs/",
            "deadletter/api/strict_json",
            "deadletter/api/json_response",
            "msgspec",
        ),
    ),
    (
        "listeners (metrics, console, long polls)",
        (
            "deadletter/api/metrics",
            "deadletter/api/console",
            "deadletter/api/notify",
            "prometheus_client",
        ),
    ),
    ("dispatch (hot routes, limits)", ("deadletter/api/hot.py", "deadletter/api/limits")),
    ("Starlette", ("starlette/",)),
    ("uvicorn and the event loop", ("uvicorn/", "asyncio/", "uvloop")),
]


def by_layer(text: str) -> tuple[int, list[tuple[str, int]]]:
    """Total samples and the samples of each layer of `LAYERS` (and "other"), most first."""
    total = 0
    layers: Counter[str] = Counter()
    for frames, count in parse_collapsed(text):
        total += count
        layers[_layer_of(frames)] += count
    return total, layers.most_common()


def _layer_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, paths in LAYERS:
            if any(p in frame for p in paths):
                return name
    return "other"


def main(paths: list[str]) -> None:
    for path in paths:
        total, layers = by_layer(Path(path).read_text())
        print(f"{path}: {total} samples")
        for name, count in layers:
            print(f"  {100 * count / max(total, 1):5.1f}%  {count:6d}  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
