"""A project holds at most `queue_quota` queues, however they are created and however many
creators race for the last places."""

from __future__ import annotations

import threading

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store
from tests.engine.helpers import P

QUOTA = 3


@pytest.fixture
def limited(store: Store, clock: ManualClock) -> Engine:
    return Engine(store, clock, queue_quota=QUOTA)


def test_a_project_at_its_quota_creates_no_more_queues_until_it_deletes_one(
    limited: Engine,
) -> None:
    for i in range(QUOTA):
        limited.create_queue(P, f"q{i}")
    with pytest.raises(errors.QueueQuotaExceeded, match="--max-queues"):
        limited.create_queue(P, "one-too-many")
    assert limited.find_queue(P, "one-too-many") is None
    # Another project has a quota of its own.
    limited.create_queue("other", "q0")
    assert limited.delete_queue(P, "q0")
    limited.create_queue(P, "in-its-place")


@pytest.mark.parametrize(
    "regions",
    [["eu-west-1", "xx-yyy-1"], ["ap-south-9"] * 3, ["eu-west-1", "eu-west-2", "us-gov-west-1"]],
)
def test_every_region_of_a_tenant_counts_against_its_one_quota(
    limited: Engine, regions: list[str]
) -> None:
    # Given a tenant whose queues are spread over its home and other regions
    projects = [P, *(f"{P}@{r}" for r in regions)]
    for i in range(QUOTA):
        limited.create_queue(projects[i % len(projects)], f"q{i}")
    # when it asks for one more in a region it never used, it is refused
    with pytest.raises(errors.QueueQuotaExceeded):
        limited.create_queue(f"{P}@zz-new-1", "one-too-many")
    # while a tenant whose name only begins like it keeps its own quota
    limited.create_queue(P + "x", "q0")
    limited.create_queue(f"{P}x@eu-west-1", "q0")


def test_a_template_creation_counts_against_the_quota(limited: Engine) -> None:
    for i in range(QUOTA):
        limited.templates.create_queue(P, f"q{i}")
    with pytest.raises(errors.QueueQuotaExceeded):
        limited.templates.create_queue(P, "one-too-many")


def test_an_existing_name_is_refused_as_existing_not_as_over_quota(limited: Engine) -> None:
    for i in range(QUOTA):
        limited.create_queue(P, f"q{i}")
    with pytest.raises(errors.QueueAlreadyExists):
        limited.create_queue(P, "q0")


def test_no_quota_means_no_limit(store: Store, clock: ManualClock) -> None:
    unlimited = Engine(store, clock, queue_quota=None)
    for i in range(QUOTA + 2):
        unlimited.create_queue(P, f"q{i}")
    assert len(unlimited.list_queues(P)) == QUOTA + 2


def test_the_default_dlq_a_policy_brings_is_not_refused_at_the_quota(limited: Engine) -> None:
    # The default DLQ comes with the policy that names it: refusing it would refuse the policy.
    for i in range(QUOTA - 1):
        limited.create_queue(P, f"q{i}")
    policy = DeadLetterPolicy(target="_dead_msg_queue", max_claims=3)
    limited.create_queue(P, "last", settings=QueueSettings(dead_letter=policy))
    assert limited.find_queue(P, "_dead_msg_queue") is not None


def test_racing_creators_in_two_processes_stop_exactly_at_the_quota(store_url: str) -> None:
    # Two stores on one database stand for two server processes; eight creators race.
    stores = [open_store(store_url), open_store(store_url)]
    try:
        engines = [Engine(s, queue_quota=QUOTA) for s in stores]
        start = threading.Barrier(8)
        outcomes: list[str] = []

        def create(i: int) -> None:
            start.wait()
            try:
                engines[i % 2].create_queue(P, f"race-{i}")
                outcomes.append("created")
            except errors.QueueQuotaExceeded:
                outcomes.append("refused")

        threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["created"] * QUOTA + ["refused"] * (8 - QUOTA)
        assert len(engines[0].list_queues(P)) == QUOTA
    finally:
        for s in stores:
            s.close()
