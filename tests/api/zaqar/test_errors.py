"""What a Zaqar client gets when a handler fails unexpectedly, and what the log keeps."""

from __future__ import annotations

import logging

import pytest

from deadletter.domain import errors
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient

# The answer to a failure is shaped by the face; the store is never reached (tests/README.md).
pytestmark = pytest.mark.one_store


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("disk on fire"), errors.DeadletterError("disk on fire")],
    ids=["not-a-domain-error", "unmapped-domain-error"],
)
def test_an_unexpected_failure_is_a_zaqar_500_logged_with_its_traceback(
    api: ApiClient,
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: Exception,
) -> None:
    # Given an engine whose list_queues fails in a way no table foresees
    def broken(*args: object, **kwargs: object) -> None:
        raise failure

    monkeypatch.setattr(engine, "list_queues", broken)
    # When a client lists queues
    with caplog.at_level(logging.ERROR, logger="deadletter.api.zaqar.errors"):
        r = api.get("/v2/queues")
    # Then it gets Zaqar's error document, without the internal message
    assert r.status_code == 500
    assert r.json() == {
        "title": "Internal server error",
        "description": "The request failed; see logs.",
    }
    # And the log has the failure with its traceback
    (record,) = [r for r in caplog.records if r.name == "deadletter.api.zaqar.errors"]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and record.exc_info[1] is failure
    assert "GET /v2/queues" in record.getMessage()


def test_a_mapped_error_is_not_logged(api: ApiClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="deadletter.api.zaqar.errors"):
        assert api.get("/v2/queues/missing").status_code == 404
    assert not [r for r in caplog.records if r.name == "deadletter.api.zaqar.errors"]
