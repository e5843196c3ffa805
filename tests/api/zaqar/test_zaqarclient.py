"""python-zaqarclient, the real OpenStack client, against the real server over a socket."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from zaqarclient.queues import client as zaqar
from zaqarclient.queues.v2 import core

from deadletter.api.app import build_app
from deadletter.api.zaqar import metadata as meta
from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import DeadLetterPolicy, RedriveAllow, RedrivePermission
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from tests.support.servers import serving


@pytest.fixture
def engine(store: Store) -> Engine:
    # Real time: the flows below never wait for a TTL, they release claims instead.
    return Engine(store)


@pytest.fixture
def cli(engine: Engine) -> Iterator[Any]:
    with serving(build_app(engine)) as url:
        yield zaqar.Client(
            url,
            version=2,
            conf={"auth_opts": {"backend": "noauth", "options": {"os_project_id": "p"}}},
        )


def test_basic_flow_with_the_real_client(cli: Any) -> None:
    assert cli.ping() is True
    q = cli.queue("jobs", force_create=True)
    assert q.exists()
    q.post([{"body": {"n": 1}, "ttl": 300}, {"body": {"n": 2}}])
    assert q.stats["messages"]["free"] == 2
    claim = q.claim(ttl=120, grace=60, limit=10)
    messages = list(claim)
    assert sorted(m.body["n"] for m in messages) == [1, 2]
    assert all(m.claim_id == claim.id for m in messages)
    messages[0].delete()
    claim.update(ttl=180)
    claim.delete()
    left = list(q.messages(echo=True))
    assert [m.body for m in left] == [messages[1].body]
    q.delete_messages(left[0].id)
    assert q.stats["messages"]["total"] == 0
    queues, _ = cli.queues()
    assert "jobs" in [x.name for x in queues]
    q.delete()
    assert not q.exists()


def test_a_queue_with_a_dlq_dead_letters_through_the_real_client(cli: Any) -> None:
    # Given a DLQ, and a queue created with a policy of two deliveries
    dlq = cli.queue("jobs-dlq", force_create=True)
    req, trans = cli._request_and_transport()
    core.queue_create(
        trans, req, "jobs", metadata={"_max_claim_count": 2, "_dead_letter_queue": "jobs-dlq"}
    )
    q = cli.queue("jobs")
    meta = q.metadata(force_reload=True)
    assert meta["_max_claim_count"] == 2 and meta["_dead_letter_queue"] == "jobs-dlq"
    q.post({"body": "poison"})
    # when a consumer claims it twice and gives it back each time,
    for _ in range(2):
        claim = q.claim(ttl=60, limit=1)
        assert [m.body for m in claim] == ["poison"]
        claim.delete()
    # the third claim gets nothing: the message moved to the DLQ, visible there at once
    assert list(q.claim(ttl=60, limit=1)) == []
    (moved,) = list(dlq.messages(echo=True))
    assert moved.body == "poison" and moved.claim_count == 2
    assert dlq.stats["dead_letter"]["by_source"] == {"jobs": 1}


def test_the_real_client_replaces_metadata(cli: Any) -> None:
    # The client sends add/replace for the keys it is given and remove for every other key
    # GET returned; removing a reserved key restores its default.
    q = cli.queue("tasks", force_create=True)
    q.metadata(new_meta={"owner": "me", "_default_message_ttl": 120})
    meta = q.metadata(force_reload=True)
    assert meta["owner"] == "me" and meta["_default_message_ttl"] == 120
    assert "_default_claim_ttl" not in meta and "_max_claim_count" not in meta
    q.metadata(new_meta={"_default_message_ttl": 3600})
    assert "owner" not in q.metadata(force_reload=True)


def test_the_real_client_sets_and_removes_a_dlq_policy_through_metadata(
    cli: Any, engine: Engine
) -> None:
    # Given a DLQ and a queue without a policy,
    cli.queue("d", force_create=True)
    q = cli.queue("jobs", force_create=True)
    # when `openstack queue set metadata` gives it one (the client patches from a GET),
    q.metadata(new_meta={"_max_claim_count": 2, "_dead_letter_queue": "d"})
    # the policy is set and in force
    policy = engine.get_queue("p", "jobs").settings.dead_letter
    assert policy is not None and (policy.target, policy.max_claims) == ("d", 2)
    meta = q.metadata(force_reload=True)
    assert meta["_max_claim_count"] == 2 and meta["_dead_letter_queue"] == "d"
    assert None not in meta.values()
    # and metadata without the policy's keys removes it.
    q.metadata(new_meta={"owner": "me"})
    assert engine.get_queue("p", "jobs").settings.dead_letter is None
    meta = q.metadata(force_reload=True)
    assert meta["owner"] == "me" and "_dead_letter_queue" not in meta


@pytest.mark.parametrize(
    "settings",
    [
        meta.ZAQAR_DEFAULTS,
        # As SQS creates a queue: its own defaults, none of them Zaqar's.
        QueueSettings(default_ttl=345_600, claim_ttl=30, receive_wait=5, labels={"team": "a"}),
        meta.ZAQAR_DEFAULTS.with_changes(
            dead_letter=DeadLetterPolicy("d", 3, message_ttl=600, on_expiry=True),
            metadata={"owner": "me"},
            max_ttl=7200,
            min_ttl=10,
            respect_ttl=True,
            dead_letter_eligible=False,
            default_delay=5,
        ),
        meta.ZAQAR_DEFAULTS.with_changes(
            redrive_allow=RedriveAllow(RedrivePermission.BY_QUEUE, ("a", "b")),
            fifo=True,
            content_based_deduplication=True,
            dead_letter_default=True,
        ),
    ],
    ids=["zaqar", "sqs", "policy", "dlq-fifo"],
)
def test_sending_back_what_the_real_client_read_changes_nothing(
    cli: Any, engine: Engine, settings: QueueSettings
) -> None:
    # Given a queue with these settings,
    engine.create_queue("p", "d", settings=meta.ZAQAR_DEFAULTS)
    engine.create_queue("p", "q", settings=settings)
    q = cli.queue("q")
    # when a client writes back the metadata it read,
    shown = q.metadata(force_reload=True)
    q.metadata(new_meta=shown)
    # nothing changed, and nothing it read was null.
    assert engine.get_queue("p", "q").settings == settings
    assert None not in shown.values()
