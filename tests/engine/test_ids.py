"""Message, claim and task ids: version-7 UUIDs in canonical form, in the order they were
made (to the millisecond), random in the rest."""

from __future__ import annotations

import itertools
import time
import uuid

from hypothesis import given
from hypothesis import strategies as st

from deadletter.engine.ids import id_at, new_id


def test_an_id_is_a_canonical_version_7_uuid() -> None:
    for _ in range(2000):
        text = new_id()
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # lower-case, hyphens where the canonical form has them
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122


def test_an_id_begins_with_the_millisecond_it_was_made_in() -> None:
    before = time.time_ns() // 1_000_000
    made = uuid.UUID(new_id()).int >> 80
    after = time.time_ns() // 1_000_000
    assert before <= made <= after


@given(st.lists(st.integers(min_value=0, max_value=2**48 - 1), min_size=2, max_size=20))
def test_ids_made_later_sort_after_as_text(milliseconds: list[int]) -> None:
    # The store's index orders ids as text: a later millisecond must sort after, whatever the
    # random bits (the time's hex digits lead, at a fixed width).
    made = [(ms, id_at(ms)) for ms in sorted(milliseconds)]
    for (ms_a, a), (ms_b, b) in itertools.pairwise(made):
        if ms_a < ms_b:
            assert a < b
        assert uuid.UUID(b).int >> 80 == ms_b


def test_the_rest_is_random_in_every_free_bit() -> None:
    # Over many ids each of the 74 random bits is seen both set and clear.
    ones = 0
    zeros = 0
    for _ in range(2000):
        value = uuid.UUID(new_id()).int & ((1 << 80) - 1)
        ones |= value
        zeros |= ~value
    random_bits = ((1 << 80) - 1) & ~(0xF << 76) & ~(0x3 << 62)  # less version and variant
    assert ones & zeros & random_bits == random_bits
    assert len({new_id() for _ in range(10_000)}) == 10_000
