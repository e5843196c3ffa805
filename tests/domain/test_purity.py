"""A pattern's purity is measured in one place (`domain.patterns.purity_of`), for the
analysis and for a hand split alike: the worst flagged place decides."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from deadletter.domain.patterns import purity_of

shares = st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=6)


def test_nothing_flagged_is_pure() -> None:
    assert purity_of([]) == {"purity": 1.0, "impure": False}


def test_the_worst_of_two_flagged_places_decides() -> None:
    # Given two places that each may hide several failures, one split 90/10, one 50/50
    # I expect the pattern as sure as its worst place: one half
    assert purity_of([0.9, 0.5]) == {"purity": 0.5, "impure": True}


@given(shares)
def test_purity_is_the_smallest_share_rounded_and_impure_below_one(values: list[float]) -> None:
    got = purity_of(values)
    worst = min(values, default=1.0)
    assert got["purity"] == round(worst, 4)
    assert got["impure"] is (worst < 1.0)
