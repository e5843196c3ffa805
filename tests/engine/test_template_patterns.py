"""One pattern, one template: of two templates with one pattern the first by name would always
win, so the engine refuses the second (on create and on change) rather than keep a template
that never applies; another project may use the pattern."""

from __future__ import annotations

from dataclasses import replace

import pytest

from deadletter.domain import errors
from deadletter.domain.templates import TemplateSettings
from deadletter.engine.engine import Engine
from tests.engine.helpers import P


@pytest.mark.parametrize("second", ["a", "z"])  # before and after the first, "m", by name
def test_a_second_template_of_a_pattern_is_refused_whatever_its_name(
    engine: Engine, second: str
) -> None:
    t = engine.templates
    t.create(P, "m", pattern="orders-*", settings=TemplateSettings(max_claims=3))
    with pytest.raises(errors.TemplatePatternTaken, match="template 'm' already has"):
        t.create(P, second, pattern="orders-*", settings=TemplateSettings(max_claims=5))
    t.create(
        P, second, pattern="orders-?", settings=TemplateSettings()
    )  # as specific, but another pattern
    with pytest.raises(errors.TemplatePatternTaken):
        t.change(P, second, change=lambda old: replace(old, pattern="orders-*"))
    assert sorted((x.name, x.pattern) for x in t.all(P)) == sorted(
        [("m", "orders-*"), (second, "orders-?")]
    )
    # A template's own pattern is no conflict, and another project has its own patterns
    t.change(P, "m", change=lambda old: replace(old, settings=TemplateSettings(max_claims=4)))
    t.create("other", second, pattern="orders-*", settings=TemplateSettings())


def test_the_name_conflict_is_its_own_kind(engine: Engine) -> None:
    engine.templates.create(P, "m", pattern="orders-*", settings=TemplateSettings())
    with pytest.raises(errors.TemplateAlreadyExists):
        engine.templates.create(P, "m", pattern="payments-*", settings=TemplateSettings())
