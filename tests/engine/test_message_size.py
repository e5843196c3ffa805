"""A message's size is its body and its attributes (names, types and values), as SQS counts
it: a message at the queue's maximum is taken, one byte more anywhere is refused, the whole
batch with it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deadletter.domain import errors
from deadletter.domain.model import Attribute, NewMessage, QueueSettings
from deadletter.engine.engine import Engine
from tests.engine.helpers import P

MAX_SIZE = 128  # more than the largest attributes drawn (3 * (8 + 13 + 8) bytes)

attributes = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=8),
    st.builds(
        Attribute,
        st.sampled_from(["String", "Number", "Binary", "String.custom"]),
        st.text("xyz019", min_size=1, max_size=8),
    ),
    min_size=1,
    max_size=3,
)


def _size(attrs: dict[str, Attribute]) -> int:
    return sum(len(name) + len(a.type) + len(a.value) for name, a in attrs.items())


@settings(
    deadline=None, max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(attrs=attributes, over=st.sampled_from([0, 1]))
def test_attributes_count_towards_the_maximum_message_size(
    engine: Engine, attrs: dict[str, Attribute], over: int
) -> None:
    if engine.find_queue(P, "orders") is None:
        engine.create_queue(P, "orders", settings=QueueSettings(max_message_size=MAX_SIZE))
    engine.purge(P, "orders")
    # A body that alone is well within the maximum, and attributes that fill the rest
    room = MAX_SIZE - _size(attrs)
    assert 0 < room < MAX_SIZE
    body = b"b" * (room + over)
    new = NewMessage(body=body, attributes=attrs)
    if over:
        with pytest.raises(errors.MessageTooLarge):
            engine.send(P, "orders", messages=[NewMessage(body=b"ok"), new])
        assert engine.stats(P, "orders").total == 0
    else:
        engine.send(P, "orders", messages=[new])
        assert engine.stats(P, "orders").total == 1
