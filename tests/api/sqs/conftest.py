"""boto3 against the real app served by uvicorn, on each backend, with the engine's worker;
the `sqs` client speaks each wire protocol in turn (JSON, then query/XML)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest

from deadletter.api.app import AppOptions, build_app
from deadletter.domain.model import QueueSettings
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage.base import Store
from tests.support.clients import ApiClient, in_process
from tests.support.servers import SharedServer, shared_server
from tests.support.sqs_fuzz import Sentinel
from tests.support.sqs_query import query_models

ACCOUNT = "123456789012"
REGION = "us-east-1"
PROTOCOLS = ["json", "query"]
_QUERY_MODELS: list[Path] = []
# One session per wire protocol for the whole run: a session loads and caches the service
# models, which is most of what making a client costs (0.1-0.3 s each, against milliseconds).
_SESSIONS: dict[str, boto3.session.Session] = {}


@pytest.fixture
def sqs_engine(store: Store) -> Engine:
    """The engine behind `server_url`, for a test that must watch the server's own state."""
    return Engine(store)


@pytest.fixture
def http(engine: Engine) -> Iterator[ApiClient]:
    """The real app in-process, for requests that boto3 would refuse to send."""
    with in_process(build_app(engine)) as client:
        yield client


@pytest.fixture
def sentinel(engine: Engine) -> Iterator[Sentinel]:
    """Given a queue `work` and a message on another queue that no request names."""
    engine.create_queue(ACCOUNT, "work", settings=QueueSettings(default_ttl=3600, max_ttl=3600))
    planted = Sentinel.plant(engine)
    yield planted
    planted.check(engine, "the test")


@pytest.fixture(scope="session")
def sqs_server() -> Iterator[SharedServer]:
    """One uvicorn for the run (per worker); each test hosts its own app on it."""
    with shared_server() as server:
        yield server


@pytest.fixture
def server_url(sqs_engine: Engine, sqs_server: SharedServer) -> Iterator[str]:
    """The real app, with its background worker, on its own engine and store."""
    engine = sqs_engine
    worker = Worker(engine, sweep_interval=0.2)
    app = build_app(engine, AppOptions(test_mode=True), background=[worker])
    with sqs_server.hosting(app) as url:
        yield url


@pytest.fixture(scope="session")
def query_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = query_models(tmp_path_factory.mktemp("models"))
    _QUERY_MODELS.append(path)
    return path


def client(
    url: str, service: str = "sqs", protocol: str = "json", region_name: str = REGION, **config: Any
) -> Any:
    """A boto3 client of `service`; an SQS one in `protocol` (the query protocol needs the
    `query_model_path` fixture to have run)."""
    made = _session(protocol if service == "sqs" else "json").client(
        service,
        endpoint_url=url,
        region_name=region_name,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        **config,
    )
    if service == "sqs":
        assert made.meta.service_model.protocol == protocol
    return made


def _session(protocol: str) -> boto3.session.Session:
    if protocol not in _SESSIONS:
        session = botocore.session.get_session()
        if protocol == "query":
            loader = botocore.loaders.Loader(extra_search_paths=[str(_QUERY_MODELS[0])])
            session.register_component("data_loader", loader)
        _SESSIONS[protocol] = boto3.session.Session(botocore_session=session)
    return _SESSIONS[protocol]


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest, query_model_path: Path) -> str:
    """Each SQS wire protocol in turn."""
    name: str = request.param
    return name


@pytest.fixture
def sqs(server_url: str, protocol: str) -> Any:
    return client(server_url, protocol=protocol)


@pytest.fixture
def make_queue(sqs: Any) -> Callable[..., str]:
    """Create a queue; returns its URL."""

    def make(name: str, **attributes: str) -> str:
        url: str = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        return url

    return make


def arn(name: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
