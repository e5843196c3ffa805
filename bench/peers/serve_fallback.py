"""Serve deadletter for the benchmark when this checkout's CLI has no `serve` command yet.

`python -m bench.peers.serve_fallback --port P --db URL`: the same composition `deadletter serve`
makes (store from the URL, engine, background worker, the one ASGI app under uvicorn).
"""

from __future__ import annotations

import argparse

import uvicorn

from deadletter.api.app import build_app
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage import open_store


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--log-level", default="warning")
    args = ap.parse_args()
    engine = Engine(open_store(args.db))
    worker = Worker(engine)
    worker.start()
    try:
        uvicorn.run(build_app(engine), host="127.0.0.1", port=args.port, log_level=args.log_level)
    finally:
        worker.stop()


if __name__ == "__main__":
    main()
