"""A declared number is a number: `true` and `false` are refused for every declared setting
by the engine itself, not only by the faces that parse JSON, although Python counts them as
1 and 0 and so within most ranges. The cases are the declarations (domain/settings.py)."""

from __future__ import annotations

import pytest

from deadletter.domain import errors
from deadletter.domain import settings as declared
from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import DeadLetterPolicy, RetryPolicy
from deadletter.engine.engine import Engine
from tests.engine.helpers import P


def _with(setting: declared.Setting, value: object) -> QueueSettings:
    """Settings with `setting` at `value`, the settings it comes with at a valid value."""
    base = QueueSettings(respect_ttl=True)
    if setting in declared.POLICY_SETTINGS:
        member = setting.field.split(".", 1)[1]
        return base.with_changes(
            dead_letter=DeadLetterPolicy(target="dlq", **{"max_claims": 1, member: value})  # type: ignore[arg-type]
        )
    if setting in declared.RETRY_SETTINGS:
        members = {s.field.split(".", 1)[1]: s.low for s in declared.RETRY_SETTINGS}
        members[setting.field.split(".", 1)[1]] = value  # type: ignore[assignment]
        return base.with_changes(retry_policy=RetryPolicy(**members))
    return base.with_changes(**{setting.field: value})


@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_is_no_value_of_a_declared_setting(engine: Engine, value: bool) -> None:
    engine.create_queue(P, "dlq")
    accepted = []
    for setting in declared.SETTINGS + declared.RETRY_SETTINGS:
        try:
            engine.create_queue(P, "q", settings=_with(setting, value))
        except errors.InvalidInput as exc:
            assert setting.what in str(exc), (setting.field, str(exc))
        else:
            accepted.append(setting.field)
            engine.delete_queue(P, "q")
    assert accepted == []
