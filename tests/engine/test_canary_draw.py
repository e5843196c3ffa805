"""The canary's draw, as pure functions: a stored template reads the raw error texts, rare
values count together, and the sample takes every kind before it takes any twice."""

from __future__ import annotations

import random

import pytest

from deadletter.domain.provenance import Provenance, Reason
from deadletter.engine.canary import (
    OTHER,
    UNMATCHED,
    draw,
    folded,
    profiles_of,
    read,
    read_text,
    template_of,
    tokens_of,
)


@pytest.mark.parametrize(
    ("template", "text", "values"),
    [
        # A template the analysis wrote without punctuation reads the raw text.
        (
            "The <*> is invalid <*>",
            "The repartition parameter 289 is invalid: cannot be null.",
            ("repartition parameter 289", "cannot be null"),
        ),
        ("The <*> is invalid <*>", "The format is invalid: csv.", ("format", "csv")),
        # Typed placeholders hold the real values; a path may hold a blank.
        (
            "could not open <PATH> read <NUM> of <NUM>",
            "could not open /mnt/Finance Reports/q3.csv: read 12 of 4096",
            ("/mnt/Finance Reports/q3.csv", "12", "4096"),
        ),
        ("<*>: connection refused", "useradd: connection refused", ("useradd",)),
        # Two variables side by side: the first takes one token, the second the rest.
        ("timeout <*> <*>", "timeout 30 s on host-7", ("30", "s on host-7")),
        # A quoted value that splitting leaves empty.
        (
            "Expecting <QUOTED> delimiter line <NUM>",
            "Expecting '}' delimiter: line 1",
            ("", "1"),
        ),
        # What the template does not read.
        ("The <*> is invalid <*>", "The format is fine", None),
        ("The <*> is invalid", "The format is invalid twice", None),
        ("disk full", "disk full: /var", None),
    ],
)
def test_a_template_reads_the_values_of_an_error_text(
    template: str, text: str, values: tuple[str, ...] | None
) -> None:
    assert read(tokens_of(text), template_of(template)) == values


def test_a_stack_trace_is_read_by_its_headline() -> None:
    template = template_of("java.lang.IllegalStateException: carrier <*> rejected parcel <ID>")
    text = (
        "java.lang.IllegalStateException: carrier DHL rejected parcel PCL-32199\n"
        "\tat com.acme.shipping.carrier.CarrierClient.book(CarrierClient.java:293)"
    )
    assert read_text(text, template) == ("DHL", "PCL-32199")
    trace = "Traceback (most recent call last):\n  File x\nKeyError: 'customer'"
    assert read_text(trace, template_of("KeyError: 'customer'")) == ()
    assert read_text(trace, template) is None


def test_a_long_text_against_many_variables_is_read_in_one_pass() -> None:
    template = template_of(" ".join(["<*> x"] * 30) + " end")
    assert read(["y"] * 5000, template) is None


def test_rare_values_count_together_and_unread_members_are_a_kind_of_their_own() -> None:
    raw: dict[str, tuple[str, ...] | None] = {f"m{i}": ("format", f"id-{i}") for i in range(990)}
    raw |= {f"r{i}": ("repartition", f"id-r{i}") for i in range(9)}
    raw["odd"] = None
    kinds = folded(raw)
    assert kinds["m1"] == ("format", OTHER)  # each id once: one kind, "other values"
    assert kinds["r1"] == ("repartition", OTHER)  # 9 of 1,000 is past 0.5%: a kind
    assert kinds["odd"] == (UNMATCHED,)


def test_the_draw_takes_every_kind_then_every_combination_then_at_random() -> None:
    rng = random.Random(0)
    profiles = {f"m{i}": (rng.choice("ab"), rng.choice("xyz")) for i in range(1000)}
    profiles |= {"rare": ("c", "x")}
    d = draw(profiles, 8, seed=3)
    assert "rare" in d.ids and len(set(d.ids)) == 8
    assert (d.kinds, d.kinds_covered) == (6, 6)
    assert (d.combinations, d.combinations_covered) == (7, 7)
    # Smaller than the kinds: the rarest kinds first.
    assert draw(profiles, 1, seed=3).ids == ("rare",)
    # The same seed, the same sample; another seed, another.
    assert draw(profiles, 50, seed=3) == draw(profiles, 50, seed=3)
    assert draw(profiles, 50, seed=3).ids != draw(profiles, 50, seed=4).ids
    assert len(draw(profiles, 5000, seed=3).ids) == 1001


def test_a_template_that_reads_none_of_the_members_gives_way_to_their_errors() -> None:
    a = Provenance("a", Reason.REJECTED, 0.0, 1, "x", 0.0, error="disk full: /var")
    b = Provenance("a", Reason.REJECTED, 0.0, 1, "y", 0.0, error="quota exceeded")
    members = [("m1", a), ("m2", b)]
    pattern = {"id": "p", "template": "timeout after <NUM> ms"}
    assert profiles_of(members, pattern)[0] == "errors"
    assert profiles_of(members, {**pattern, "template": "disk full <*>"})[0] == "pattern"
    assert profiles_of([("m1", None)], pattern)[0] == "random"
