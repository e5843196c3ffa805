"""The app's lifespan runs the server's background jobs: started on startup, stopped after."""

from __future__ import annotations

import httpx

from deadletter.api.app import build_app
from deadletter.engine.engine import Engine
from tests.support.servers import serving


class Recorder:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def start(self) -> None:
        self.log.append(f"start {self.name}")

    def stop(self) -> None:
        self.log.append(f"stop {self.name}")


def test_background_jobs_start_with_the_app_and_stop_in_reverse(engine: Engine) -> None:
    log: list[str] = []
    app = build_app(engine, background=[Recorder("worker", log), Recorder("poller", log)])
    with serving(app) as url:
        assert httpx.get(f"{url}/v2/ping").status_code == 204
        assert log == ["start worker", "start poller"]
    assert log == ["start worker", "start poller", "stop poller", "stop worker"]
