"""The permission table, and that every operation both faces implement is mapped onto it."""

from __future__ import annotations

import pytest

from deadletter.api.sqs.actions import ASYNC_ACTIONS, SYNC_ACTIONS
from deadletter.api.zaqar.routes import ROUTES
from deadletter.auth.roles import (
    PERMISSIONS,
    PUBLIC_ZAQAR_ROUTES,
    SQS_ACTIONS,
    ZAQAR_ROUTES,
    Action,
    Role,
    allowed,
    permits,
    zaqar_action,
)


def test_every_sqs_action_the_face_implements_is_mapped() -> None:
    implemented = set(SYNC_ACTIONS) | set(ASYNC_ACTIONS)
    assert implemented - set(SQS_ACTIONS) == set()


def test_every_zaqar_route_is_mapped_or_public() -> None:
    for path, method, _handler, _client_id in ROUTES:
        if (method, path) not in PUBLIC_ZAQAR_ROUTES:
            assert (method, path) in ZAQAR_ROUTES, (method, path)


def test_an_unmapped_zaqar_route_fails_loudly() -> None:
    with pytest.raises(KeyError):
        zaqar_action("POST", "/v2/queues/{queue}/something_new", {})


def test_operator_may_do_everything() -> None:
    assert all(allowed(Role.OPERATOR, a) for a in Action)


def test_admin_may_do_everything_in_its_project_except_server_actions() -> None:
    assert allowed(Role.ADMIN, Action.CREDENTIALS_MANAGE)
    assert allowed(Role.ADMIN, Action.QUEUE_DELETE)
    assert not allowed(Role.ADMIN, Action.PROJECT_CREATE)
    assert not allowed(Role.ADMIN, Action.SERVER_HEALTH)


@pytest.mark.parametrize(
    ("role", "may", "may_not"),
    [
        (Role.PRODUCER, Action.MESSAGE_SEND, Action.MESSAGE_CLAIM),
        (Role.PRODUCER, Action.QUEUE_GET, Action.MESSAGE_BROWSE),
        (Role.CONSUMER, Action.MESSAGE_CLAIM, Action.MESSAGE_SEND),
        (Role.CONSUMER, Action.MESSAGE_DEAD_LETTER, Action.QUEUE_PURGE),
        (Role.CONSUMER, Action.MESSAGE_VISIBILITY, Action.REDRIVE_START),
        (Role.READER, Action.MESSAGE_PEEK, Action.MESSAGE_ACK),
        (Role.READER, Action.DLQ_EXPORT, Action.PATTERNS_PUT),
        (Role.READER, Action.PATTERNS_GET, Action.QUEUE_CREATE),
    ],
)
def test_project_roles(role: Role, may: Action, may_not: Action) -> None:
    assert allowed(role, may)
    assert not allowed(role, may_not)


def test_only_admin_and_operator_manage_credentials_or_share() -> None:
    for role in Role:
        expected = role in (Role.ADMIN, Role.OPERATOR)
        assert allowed(role, Action.CREDENTIALS_MANAGE) is expected
        assert allowed(role, Action.QUEUE_SHARE) is expected


def test_project_roles_stay_in_their_project() -> None:
    assert permits(Role.ADMIN, "p1", "p1", Action.QUEUE_DELETE)
    assert not permits(Role.ADMIN, "p1", "p2", Action.QUEUE_GET)
    assert not permits(Role.READER, "p1", "p2", Action.MESSAGE_BROWSE)
    assert permits(Role.OPERATOR, "ops", "p2", Action.QUEUE_DELETE)


def test_every_role_has_a_row() -> None:
    assert set(PERMISSIONS) == set(Role)


def test_zaqar_actions_that_depend_on_parameters() -> None:
    messages = "/v2/queues/{queue}/messages"
    assert zaqar_action("DELETE", messages, {"ids": "a,b"}) is Action.MESSAGE_ACK
    assert zaqar_action("DELETE", messages, {"pop": "2"}) is Action.MESSAGE_CLAIM
    assert zaqar_action("GET", messages, {}) is Action.MESSAGE_BROWSE
    assert zaqar_action("GET", messages, {"ids": "a"}) is Action.MESSAGE_PEEK
    assert zaqar_action("get", "/v2/ping", {}) is None
