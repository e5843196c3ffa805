"""Every declared queue setting's range holds at its edges in the engine and on each face that
names the setting, as declared (domain/settings.py): the cases are generated from the
declarations, so a setting declared tomorrow is tested the day it is declared."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from deadletter.api.app import build_app
from deadletter.domain import errors
from deadletter.domain import settings as declared
from deadletter.domain.model import QueueSettings
from deadletter.domain.policies import DeadLetterPolicy, RetryPolicy
from deadletter.engine.engine import Engine
from tests.api.zaqar.conftest import ApiClient
from tests.support.clients import in_process

ACCOUNT = "123456789012"
SQS_TARGET = "AmazonSQS."


def _edges(low: int, high: int) -> list[tuple[int, bool]]:
    """(value, accepted) at both ends of a range."""
    return [(low - 1, False), (low, True), (high, True), (high + 1, False)]


def _cases(face: str) -> list[Any]:
    out = []
    for setting in declared.SETTINGS + declared.RETRY_SETTINGS:
        name = getattr(setting, face) if face != "engine" else None
        if face != "engine" and name is None:
            continue
        low, high = (setting.low, setting.high) if name is None else setting.face_range(name)
        for value, accepted in _edges(low, high):
            ok = "accepted" if accepted else "refused"
            out.append(pytest.param(setting, value, accepted, id=f"{setting.field}={value}-{ok}"))
    return out


def _retry_policy(setting: declared.Setting, value: int, face: str) -> dict[str, int]:
    """A retry policy (by member names on `face`) with `setting` at `value` and the other
    members at the same value within their range, so only `setting`'s range can refuse it."""
    key = declared.RETRY_POLICY.field if face == "engine" else getattr(declared.RETRY_POLICY, face)
    out = {}
    for member, s in declared.members(key, "sqs" if face == "engine" else face).items():
        name = s.field.split(".")[1] if face == "engine" else member
        out[name] = value if s is setting else min(max(value, s.low), s.high)
    return out


def test_every_dependency_is_declared() -> None:
    fields = {s.field for s in declared.SETTINGS} | {declared.DLQ_TARGET.field}
    for setting in declared.SETTINGS:
        assert set(setting.needs) <= fields, setting.field


@pytest.fixture
def app(engine: Engine) -> Iterator[ApiClient]:
    """The app in-process, with a DLQ for the settings that need one."""
    engine.create_queue(ACCOUNT, "dlq", settings=QueueSettings())
    with in_process(
        build_app(engine), headers={"Client-ID": "3f8b0a0e-0d47-4f3e-9b59-7f0c1e6a2a11"}
    ) as client:
        yield client


@pytest.mark.parametrize(("setting", "value", "accepted"), _cases("engine"))
def test_the_engine_holds_each_declared_range(
    engine: Engine, setting: declared.Setting, value: int, accepted: bool
) -> None:
    engine.create_queue(ACCOUNT, "dlq", settings=QueueSettings())
    # Respect-TTL, so that a TTL at its edge is not refused for exceeding another TTL.
    base = QueueSettings(respect_ttl=True)
    if setting.field.startswith("dead_letter."):
        values = {"max_claims": 1, setting.field.split(".", 1)[1]: value}
        settings = base.with_changes(dead_letter=DeadLetterPolicy("dlq", **values))
    elif setting in declared.RETRY_SETTINGS:
        policy = RetryPolicy(**_retry_policy(setting, value, "engine"))
        settings = base.with_changes(retry_policy=policy)
    else:
        settings = base.with_changes(**{setting.field: value})
    if accepted:
        assert setting.value(engine.create_queue(ACCOUNT, "q", settings=settings).settings) == value
    else:
        with pytest.raises(errors.InvalidInput, match=setting.what):
            engine.create_queue(ACCOUNT, "q", settings=settings)
        assert engine.find_queue(ACCOUNT, "q") is None


def _zaqar_needs(setting: declared.Setting) -> dict[str, Any]:
    by_field = {s.field: s for s in declared.SETTINGS}
    out: dict[str, Any] = {}
    for field in setting.needs:
        if field == declared.DLQ_TARGET.field:
            out[declared.DLQ_TARGET.zaqar] = "dlq"
        else:
            needed = by_field[field]
            assert needed.zaqar is not None
            out[needed.zaqar.name] = needed.face_range(needed.zaqar)[0]
    return out


@pytest.mark.parametrize(("setting", "value", "accepted"), _cases("zaqar"))
def test_the_zaqar_face_holds_each_declared_range(
    app: ApiClient, engine: Engine, setting: declared.Setting, value: int, accepted: bool
) -> None:
    assert setting.zaqar is not None
    metadata = {"_respect_ttl": True, **_zaqar_needs(setting), setting.zaqar.name: value}
    if setting in declared.RETRY_SETTINGS:  # a member of the policy's key
        key = declared.RETRY_POLICY.zaqar
        metadata = {key: _retry_policy(setting, value, "zaqar")}
    r = app.put("/v2/queues/q", json=metadata, headers={"X-Project-ID": ACCOUNT})
    assert r.status_code == (201 if accepted else 400), r.text
    queue = engine.find_queue(ACCOUNT, "q")
    if accepted:
        assert queue is not None and setting.value(queue.settings) == value
    else:
        # Named by its key, or in the engine's words where the engine checks it.
        description = r.json()["description"]
        assert setting.zaqar.name in description or setting.what in description
        assert queue is None


def _sqs(app: ApiClient, action: str, params: dict[str, Any]) -> Any:
    return app.post(
        "/",
        content=json.dumps(params),
        headers={
            "X-Amz-Target": SQS_TARGET + action,
            "Content-Type": "application/x-amz-json-1.0",
        },
    )


@pytest.mark.parametrize(("setting", "value", "accepted"), _cases("sqs"))
def test_the_sqs_face_holds_each_declared_range(
    app: ApiClient, setting: declared.Setting, value: int, accepted: bool
) -> None:
    assert setting.sqs is not None
    attribute, _, member = setting.sqs.name.partition(".")
    if setting in declared.RETRY_SETTINGS:  # a member of the policy's attribute
        attributes = {attribute: json.dumps(_retry_policy(setting, value, "sqs"))}
    elif member:  # a member of a JSON attribute, with the members it needs
        assert set(setting.needs) == {declared.DLQ_TARGET.field}
        target = declared.DLQ_TARGET.sqs.partition(".")[2]
        doc = {target: f"arn:aws:sqs:us-east-1:{ACCOUNT}:dlq", member: value}
        attributes = {attribute: json.dumps(doc)}
    else:
        attributes = {attribute: str(value)}
    r = _sqs(app, "CreateQueue", {"QueueName": "q", "Attributes": attributes})
    assert r.status_code == (200 if accepted else 400), r.text
    asked = {"QueueUrl": "q", "AttributeNames": [attribute]}
    shown = _sqs(app, "GetQueueAttributes", asked).json()
    if accepted:
        got = shown["Attributes"][attribute]
        assert (json.loads(got)[member] if member else int(got)) == value
    else:
        assert r.json()["__type"].endswith(("InvalidAttributeValue", "InvalidParameterValue"))
        assert shown["__type"].endswith("QueueDoesNotExist")
