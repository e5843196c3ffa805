"""Message, claim and task ids are random version-4 UUIDs in canonical form."""

from __future__ import annotations

import uuid

from deadletter.engine.ids import new_id


def test_an_id_is_a_canonical_version_4_uuid() -> None:
    for _ in range(2000):
        text = new_id()
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # lower-case, hyphens where the canonical form has them
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_ids_are_random_in_every_free_bit() -> None:
    # Over many ids each of the 122 free bits is seen both set and clear; the six fixed ones
    # (version and variant) never change.
    ones = 0
    zeros = 0
    for _ in range(2000):
        value = uuid.UUID(new_id()).int
        ones |= value
        zeros |= ~value
    fixed = ones & ~zeros | zeros & ~ones
    assert bin(fixed & ((1 << 128) - 1)).count("1") == 6
    assert len({new_id() for _ in range(10_000)}) == 10_000
