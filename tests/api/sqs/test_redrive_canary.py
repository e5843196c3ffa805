"""SQS's move tasks have no canary; a native task its canary paused is listed as FAILED, with
the canary's verdict as the reason."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deadletter.api.app import AppOptions, build_app
from deadletter.clock import ManualClock
from deadletter.domain.model import NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.redrive import Canary, TaskStatus
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from tests.api.sqs.conftest import ACCOUNT, arn, client
from tests.support.servers import SharedServer


@pytest.fixture
def served(store: Store, sqs_server: SharedServer) -> Iterator[tuple[Engine, str]]:
    engine = Engine(store, clock=ManualClock())
    with sqs_server.hosting(build_app(engine, AppOptions(test_mode=True))) as url:
        yield engine, url


def test_a_paused_task_is_listed_as_failed_with_the_canarys_verdict(
    served: tuple[Engine, str],
) -> None:
    engine, url = served
    # Given a native redrive whose one canary died again
    engine.create_queue(ACCOUNT, "dlq")
    policy = DeadLetterPolicy(target="dlq", max_claims=1)
    engine.create_queue(ACCOUNT, "orders", settings=QueueSettings(dead_letter=policy))

    def kill() -> None:
        engine.send(ACCOUNT, "orders", messages=[NewMessage(body=b"x")])
        engine.release_claim(
            ACCOUNT, "orders", claim_id=engine.claim(ACCOUNT, "orders", limit=10).id
        )
        engine.claim(ACCOUNT, "orders", limit=10)  # delivered once already: it moves to the DLQ

    kill()
    task = engine.start_redrive(ACCOUNT, "dlq", canary=Canary(count=1))
    engine.redrive_step(task.id, 10)
    kill()
    assert engine.redrive_step(task.id, 10).status is TaskStatus.PAUSED
    # When SQS lists the DLQ's move tasks
    (listed,) = client(url).list_message_move_tasks(SourceArn=arn("dlq"))["Results"]
    # Then it is FAILED, with the reason, and no handle to cancel it by
    assert listed["Status"] == "FAILED"
    assert listed["FailureReason"] == "paused by its canary: 1 of 1 canaries died again"
    assert "TaskHandle" not in listed
