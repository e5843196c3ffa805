"""A give-back (release, nack) racing a renewal or a visibility change of the same claim on
PostgreSQL: whichever reads the message first holds it until it commits, so neither writes
over the other with a state it read before the other committed.

Each race is played in one order, deliberately: the renewal (or visibility change) reads the
claim's messages in its transaction and stops there; the give-back starts in another
transaction, and once it has either committed or is waiting for a row the first holds, the
first goes on. Before the first's reads locked what they read, the give-back committed
in between and the first then wrote the claim back over it. SQLite needs no such test: its
writers are serial.

A sweep that settles messages become visible does not make a claim beside it skip them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from deadletter.domain.model import Claim, NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store, Transaction
from tests.engine.helpers import P
from tests.services import POSTGRES_URL, postgres_schema

pytestmark = pytest.mark.postgres

TAGS = [pytest.param(None, id="untagged"), pytest.param("billing", id="tag")]


@pytest.fixture
def stores() -> Iterator[tuple[Store, Store]]:
    """Two stores on one PostgreSQL schema: two pools, as two server processes have."""
    with postgres_schema() as url:
        first, second = open_store(url), open_store(url)
        try:
            yield first, second
        finally:
            first.close()
            second.close()


class Pause:
    """Stops the first transaction of `store` that calls `method`, right after that read,
    until `go` is set; `pid` is then its PostgreSQL backend."""

    def __init__(self, store: Store, method: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reached = threading.Event()
        self.go = threading.Event()
        self.pid = 0
        original = store.transaction

        @contextmanager
        def transaction() -> Iterator[Transaction]:
            with original() as tx:
                if not self.reached.is_set():
                    self._stop_after(tx, method)
                yield tx

        monkeypatch.setattr(store, "transaction", transaction)

    def _stop_after(self, tx: Any, method: str) -> None:
        read = getattr(tx, method)

        def read_then_wait(*args: Any, **kwargs: Any) -> Any:
            result = read(*args, **kwargs)
            if not self.reached.is_set():
                self.pid = int(tx.one("SELECT pg_backend_pid() AS pid", {})["pid"])
                self.reached.set()
                self.go.wait()
            return result

        setattr(tx, method, read_then_wait)


def _blocked_by(pid: int) -> bool:
    """Whether some backend waits for a lock that `pid` holds."""
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid)))",
            (pid,),
        ).fetchone()
        return bool(row and row[0])


def race(pause: Pause, first: Callable[[], object], second: Callable[[], object]) -> list[str]:
    """Run `first` up to its pause, then `second` until it has committed or waits for the
    first; then let the first go on and wait for both. The errors each raised, by name."""
    failures: list[str] = []

    def run(work: Callable[[], object]) -> None:
        try:
            work()
        except Exception as exc:
            failures.append(type(exc).__name__)

    one = threading.Thread(target=run, args=(first,))
    one.start()
    pause.reached.wait()
    two = threading.Thread(target=run, args=(second,))
    two.start()
    while two.is_alive() and not _blocked_by(pause.pid):
        time.sleep(0.01)
    pause.go.set()
    one.join()
    two.join()
    return failures


def _claimed(engine: Engine, tag: str | None) -> tuple[str, str]:
    """(message id, claim id) of a message sent to a new queue `q` and claimed for a minute."""
    engine.create_queue(P, "q")
    if tag is not None:
        engine.create_tag(P, "q", name=tag)
    (sent,) = engine.send(P, "q", messages=[NewMessage(body=b"x")])
    claim = engine.claim(P, "q", limit=1, ttl=60, tag=tag)
    assert [m.id for m in claim.messages] == [sent.id]
    return sent.id, claim.id


# The read of a claim's messages by id, untagged (True) or for a tag (False).
_MESSAGES_READ = {True: "get_messages", False: "tag_messages"}


def _give_back_and_claim_again(
    engine: Engine, message_id: str, claim_id: str, tag: str | None, taken: list[Claim]
) -> None:
    """Another consumer's turn: the message given back, then claimed anew (into `taken`)."""
    engine.release_message(P, "q", message_id=message_id, claim_id=claim_id, tag=tag)
    taken.append(engine.claim(P, "q", limit=1, ttl=600, tag=tag))


@pytest.mark.parametrize("tag", TAGS)
def test_a_claim_released_while_it_is_renewed_stays_released(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch, tag: str | None
) -> None:
    renewing, releasing = Engine(stores[0]), Engine(stores[1])
    message_id, claim_id = _claimed(releasing, tag)
    # Given a renewal that has read the claim's messages
    pause = Pause(stores[0], "claimed_by" if tag is None else "tag_claimed_by", monkeypatch)
    # when the claim is released meanwhile
    failures = race(
        pause,
        lambda: renewing.renew_claim(P, "q", claim_id=claim_id, ttl=600, tag=tag),
        lambda: releasing.release_claim(P, "q", claim_id=claim_id, tag=tag),
    )
    # I expect both to have happened, one after the other: the message is free again
    assert failures == []
    again = releasing.claim(P, "q", limit=1, ttl=60, tag=tag)
    assert [(m.id, m.claim_count) for m in again.messages] == [(message_id, 2)]


@pytest.mark.parametrize("tag", TAGS)
def test_a_message_given_back_and_claimed_again_while_its_visibility_changes_keeps_its_new_claim(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch, tag: str | None
) -> None:
    changing, other = Engine(stores[0]), Engine(stores[1])
    message_id, claim_id = _claimed(other, tag)
    taken: list[Claim] = []
    # Given a visibility change that has read the message
    pause = Pause(stores[0], _MESSAGES_READ[tag is None], monkeypatch)
    # when the message is given back and claimed by another consumer meanwhile
    failures = race(
        pause,
        lambda: changing.change_visibility(
            P, "q", message_id=message_id, claim_id=claim_id, timeout=300, tag=tag
        ),
        lambda: _give_back_and_claim_again(other, message_id, claim_id, tag, taken),
    )
    # I expect the new claim to hold the message, its delivery counted
    assert failures == []
    (again,) = taken
    assert [(m.id, m.claim_count) for m in again.messages] == [(message_id, 2)]
    if tag is None:
        assert other.get_message(P, "q", message_id=message_id).claim_count == 2
    assert other.delete_message(P, "q", message_id=message_id, claim_id=again.id, tag=tag)


# How a delete takes the messages it may delete, each its own way: a batch under one claim
# in its delete statement, a batch under several claims by a locked read first, a tag
# through its delivery states.
DELETES = [
    pytest.param(None, "delete_held", False, id="one-claim"),
    pytest.param(None, "get_messages", True, id="several-claims"),
    pytest.param("billing", "tag_messages", False, id="tag"),
]


@pytest.mark.parametrize(("tag", "locking", "several"), DELETES)
def test_a_delete_racing_a_give_back_and_a_new_claim_never_deletes_the_new_claims_message(
    stores: tuple[Store, Store],
    monkeypatch: pytest.MonkeyPatch,
    tag: str | None,
    locking: str,
    several: bool,
) -> None:
    deleting, other = Engine(stores[0]), Engine(stores[1])
    message_id, claim_id = _claimed(other, tag)
    held: list[tuple[str, str | None]] = [(message_id, claim_id)]
    if several:  # a batch of handles from two receives, one of them stale
        held.append((message_id, "0" * 24))
    taken: list[Claim] = []
    answers: list[list[bool | Exception]] = []
    # Given a delete under the claim that has taken the message
    pause = Pause(stores[0], locking, monkeypatch)
    # when the message is given back and claimed by another consumer meanwhile
    failures = race(
        pause,
        lambda: answers.append(list(deleting.delete_held(P, "q", held=held, tag=tag))),
        lambda: _give_back_and_claim_again(other, message_id, claim_id, tag, taken),
    )
    # I expect the delete to come first, whole: the give-back then finds the message gone,
    # and no consumer was handed a message that a stale claim then deleted
    assert failures == ["MessageNotFound"]
    assert answers[0][0] is True
    assert taken == []
    assert other.claim(P, "q", limit=10, ttl=60, tag=tag).messages == ()


def test_a_message_given_back_with_no_delay_is_claimed_again_beside_the_sweep(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    sweeping, consumer = Engine(stores[0]), Engine(stores[1])
    consumer.create_queue(P, "q")
    (sent,) = consumer.send(P, "q", messages=[NewMessage(body=b"x")])
    # Given a message received with a visibility of 0 (SQS's way to give it back at once)
    assert [m.id for m in consumer.claim(P, "q", limit=1, ttl=0).messages] == [sent.id]
    taken: list[Claim] = []
    # When the sweep settles what has become visible, in a transaction still open
    pause = Pause(stores[0], "settle_hidden", monkeypatch)
    failures = race(
        pause,
        sweeping.sweep_expired,
        lambda: taken.append(consumer.claim(P, "q", limit=1, ttl=0)),
    )
    # I expect the next receive to get it, not to skip it as locked by the sweep
    assert failures == []
    assert [[m.id for m in claim.messages] for claim in taken] == [[sent.id]]
