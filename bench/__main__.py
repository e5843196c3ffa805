"""Dispatch `python -m bench NAME [ARGS]` to `bench/NAME_bench.py`'s `main(argv)`."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def available() -> list[str]:
    folder = Path(__file__).parent
    return sorted(
        m.name.removesuffix("_bench")
        for m in pkgutil.iter_modules([str(folder)])
        if m.name.endswith("_bench")
    )


def main() -> int:
    names = available()
    if len(sys.argv) < 2 or sys.argv[1] not in names:
        print(f"usage: ./dev bench {{{','.join(names)}}} [ARGS]  (see docs/benchmarks.md)")
        return 2
    module = importlib.import_module(f"bench.{sys.argv[1]}_bench")
    result: int = module.main(sys.argv[2:])
    return result


if __name__ == "__main__":
    sys.exit(main())
