"""The AWS CLI against the server, unchanged but for --endpoint-url; and no test endpoints
outside test mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from deadletter.api.app import AppOptions, build_app
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from tests.services import missing
from tests.support.servers import serving

AWS = Path(sys.executable).parent / "aws"


@pytest.fixture
def aws_cli() -> None:
    """The AWS CLI beside the test's Python (`./dev test` installs it); CI fails without it."""
    if not AWS.exists():
        missing(f"the awscli package is not installed ({AWS} is missing)")


def _aws(url: str, tmp_path: Path, *args: str, key: tuple[str, str] = ("test", "test")) -> Any:
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": key[0],
        "AWS_SECRET_ACCESS_KEY": key[1],
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
    }
    done = subprocess.run(
        [str(AWS), "sqs", *args, "--endpoint-url", url, "--output", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout) if done.stdout.strip() else None


@pytest.mark.usefixtures("aws_cli")
def test_basic_flow(server_url: str, tmp_path: Path) -> None:
    url = _aws(server_url, tmp_path, "create-queue", "--queue-name", "cli")["QueueUrl"]
    _aws(server_url, tmp_path, "send-message", "--queue-url", url, "--message-body", "hi")
    got = _aws(server_url, tmp_path, "receive-message", "--queue-url", url)["Messages"]
    assert got[0]["Body"] == "hi"
    _aws(
        server_url,
        tmp_path,
        "delete-message",
        "--queue-url",
        url,
        "--receipt-handle",
        got[0]["ReceiptHandle"],
    )
    attributes = _aws(
        server_url, tmp_path, "get-queue-attributes", "--queue-url", url, "--attribute-names", "All"
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"


def test_reset_exists_only_in_test_mode(store: Store) -> None:
    engine = Engine(store)
    engine.create_queue("123456789012", "kept")
    with serving(build_app(engine, AppOptions(test_mode=False))) as url:
        assert httpx.post(f"{url}/moto-api/reset").status_code >= 400
        assert engine.find_queue("123456789012", "kept") is not None
        r = httpx.post(url, data={"Action": "GetCallerIdentity", "Version": "2011-06-15"})
        assert r.status_code == 400


@pytest.mark.usefixtures("aws_cli")
def test_with_credentials_required_a_real_key_pair_works_and_a_wrong_one_fails(
    store: Store, tmp_path: Path
) -> None:
    from tests.auth.live import live_server

    with live_server(store) as live:
        credential, secret = live.issue("tenant-a", "admin")
        key = (credential.key_id, secret)
        url = _aws(live.url, tmp_path, "create-queue", "--queue-name", "cli", key=key)["QueueUrl"]
        assert f"/{credential.account_id}/cli" in url
        _aws(
            live.url, tmp_path, "send-message", "--queue-url", url, "--message-body", "hi", key=key
        )
        with pytest.raises(subprocess.CalledProcessError) as refused:
            _aws(live.url, tmp_path, "receive-message", "--queue-url", url,
                 key=(credential.key_id, "wrong"))  # fmt: skip
        assert "SignatureDoesNotMatch" in refused.value.stderr
        got = _aws(live.url, tmp_path, "receive-message", "--queue-url", url, key=key)
        assert [m["Body"] for m in got["Messages"]] == ["hi"]
