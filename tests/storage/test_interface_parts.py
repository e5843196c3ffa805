"""The storage interface is the union of its parts: each primitive in exactly one part, each
part said in one line, and the SQL implementation complete."""

from __future__ import annotations

import inspect

from deadletter.storage.base import Transaction
from deadletter.storage.parts.administration import Administration
from deadletter.storage.parts.counts import Counts
from deadletter.storage.parts.failure_groups import FailureGroups
from deadletter.storage.parts.groups import Groups
from deadletter.storage.parts.messages import Messages
from deadletter.storage.parts.queues import Queues
from deadletter.storage.parts.subscriptions import Subscriptions
from deadletter.storage.postgres.backend import PostgresTransaction
from deadletter.storage.sql.transaction import SQLTransaction

PARTS = (Queues, Messages, Counts, Groups, Subscriptions, Administration, FailureGroups)


def _own(part: type) -> set[str]:
    return {n for n, f in vars(part).items() if getattr(f, "__isabstractmethod__", False)}


def test_every_primitive_is_in_exactly_one_part() -> None:
    seen: dict[str, str] = {}
    for part in PARTS:
        for name in _own(part):
            assert name not in seen, f"{name} is in {seen[name]} and {part.__name__}"
            seen[name] = part.__name__
    assert set(seen) == set(Transaction.__abstractmethods__)
    assert set(Transaction.__bases__) == set(PARTS)


def test_each_part_is_said_in_one_line() -> None:
    for part in PARTS:
        doc = inspect.getdoc(part) or ""
        assert doc and "\n" not in doc, part.__name__


def test_the_sql_transactions_implement_every_primitive() -> None:
    assert not SQLTransaction.__abstractmethods__
    assert not PostgresTransaction.__abstractmethods__
