"""A live server with authentication required, and clients that sign their requests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import boto3
import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from deadletter.api.app import AppOptions, build_app
from deadletter.auth.credentials import MasterKey
from deadletter.engine.credentials import Authority, Credential
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from tests.support.servers import serving

REGION = "us-east-1"
CLIENT_ID = "3381af92-2b9e-11e3-b191-71861300734c"


@dataclass
class Live:
    url: str
    authority: Authority
    engine: Engine

    def issue(self, project: str, role: str) -> tuple[Credential, str]:
        return self.authority.create(project, role)


@contextmanager
def live_server(store: Store, test_mode: bool = False) -> Iterator[Live]:
    engine = Engine(store)
    authority = Authority(engine, MasterKey.generate())
    app = build_app(engine, AppOptions(authority=authority, test_mode=test_mode))
    with serving(app) as url:
        yield Live(url, authority, engine)


def boto(url: str, key_id: str, secret: str, region: str = REGION, **config: Any) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=url,
        region_name=region,
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}, **config),
    )


def query_call(
    url: str, key_id: str, secret: str, path: str = "/", **fields: str
) -> httpx.Response:
    """A query-protocol request signed as botocore signs it."""
    body = urlencode(fields)
    request = AWSRequest(
        method="POST",
        url=url + path,
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    SigV4Auth(Credentials(key_id, secret), "sqs", REGION).add_auth(request)
    return httpx.post(url + path, content=body, headers=dict(request.headers.items()))


def zaqar(
    url: str,
    method: str,
    path: str,
    token: str | None = None,
    project: str | None = None,
    **kwargs: Any,
) -> httpx.Response:
    headers = {"Client-ID": CLIENT_ID, **kwargs.pop("headers", {})}
    if token is not None:
        headers["X-Auth-Token"] = token
    if project is not None:
        headers["X-Project-ID"] = project
    return httpx.request(method, url + path, headers=headers, **kwargs)
