"""Reading py-spy's raw (collapsed-stack) profiles of the server: where the samples went."""

from __future__ import annotations

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
