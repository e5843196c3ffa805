"""`deadletter serve --webhook-allow`: the operator's allow-list, from the flag or its
variable, reaching both the check at subscription and the sender of a real server process."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
from click.testing import CliRunner

from deadletter.cli.main import main
from deadletter.config import ServerConfig, config_from_json, config_to_json
from tests.api.serve_process import start, stop
from tests.support.receivers import receiving


def test_help_lists_the_flag_with_its_environment_variable() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"], terminal_width=200)
    assert "--webhook-allow" in result.output and "DEADLETTER_WEBHOOK_ALLOW" in result.output


def test_a_value_that_is_not_a_network_stops_the_server_before_it_starts() -> None:
    by_flag = CliRunner().invoke(main, ["serve", "--webhook-allow", "10.0.0.0/33"])
    by_env = CliRunner().invoke(main, ["serve"], env={"DEADLETTER_WEBHOOK_ALLOW": "127.0.0.0/8 x"})
    for result in (by_flag, by_env):
        assert result.exit_code != 0 and "--webhook-allow" in result.output


def test_the_allow_list_survives_the_workers_configuration() -> None:
    config = ServerConfig(webhook_allow=("10.0.0.0/8", "fd00::/8"))
    assert config_from_json(config_to_json(config)) == config


def test_a_server_reaches_a_loopback_webhook_only_when_allowed(tmp_path: Path) -> None:
    with receiving() as hook:
        subscription = {"subscriber": hook.url, "ttl": 600}
        # Without the flag, loopback is refused at subscription
        proc, url = start(f"sqlite:///{tmp_path / 'closed.db'}", tmp_path)
        try:
            with httpx.Client(base_url=url, headers={"Client-ID": str(uuid.uuid4())}) as c:
                refused = c.post("/v2/queues/q/subscriptions", json=subscription)
                assert refused.status_code == 400 and "loopback" in refused.text
        finally:
            stop(proc)
        # with it, the subscription is made and the server's sender delivers to it
        db = f"sqlite:///{tmp_path / 'open.db'}"
        proc, url = start(db, tmp_path, "--webhook-allow", "127.0.0.0/8")
        try:
            with httpx.Client(base_url=url, headers={"Client-ID": str(uuid.uuid4())}) as c:
                made = c.post("/v2/queues/q/subscriptions", json=subscription)
                assert made.status_code == 201, made.text
                c.post("/v2/queues/q/messages", json={"messages": [{"body": {"n": 1}}]})
                assert hook.wait_for(1)
        finally:
            stop(proc)
    assert hook.bodies[0]["body"] == {"n": 1}
