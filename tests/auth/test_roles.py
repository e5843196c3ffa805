"""The permission table, and that every operation both faces implement is mapped onto it."""

from __future__ import annotations

from pathlib import Path

import pytest

from deadletter.api.sqs.actions import ASYNC_ACTIONS, OPERATIONS, SYNC_ACTIONS
from deadletter.auth.roles import (
    PERMISSIONS,
    Action,
    Role,
    UnknownChoice,
    allowed,
    parse_role,
    permits,
)
from tests.support.routes import zaqar_action


def test_every_sqs_action_the_face_implements_is_mapped() -> None:
    implemented = set(SYNC_ACTIONS) | set(ASYNC_ACTIONS)
    assert implemented == set(OPERATIONS)
    assert all(isinstance(op.permission, Action) for op in OPERATIONS.values())


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


# The role table as docs/security.md publishes it, row by row, onto the actions each row names.
# Every action is in exactly one row, so a new action fails here until the docs say who may.
DOC_ROWS: dict[str, frozenset[Action]] = {
    "find queues": frozenset({Action.QUEUE_LIST, Action.QUEUE_GET}),
    "create, delete, update settings and tags, purge": frozenset(
        {Action.QUEUE_CREATE, Action.QUEUE_DELETE, Action.QUEUE_UPDATE, Action.QUEUE_PURGE}
    ),
    "send": frozenset({Action.MESSAGE_SEND}),
    "claim/receive": frozenset(
        {
            Action.MESSAGE_CLAIM,
            Action.MESSAGE_ACK,
            Action.MESSAGE_RELEASE,
            Action.MESSAGE_DEAD_LETTER,
            Action.MESSAGE_VISIBILITY,
        }
    ),
    "browse and peek messages, stats": frozenset(
        {Action.MESSAGE_BROWSE, Action.MESSAGE_PEEK, Action.QUEUE_STATS}
    ),
    "DLQ browse and export": frozenset(
        {
            Action.DLQ_BROWSE,
            Action.DLQ_EXPORT,
            Action.REDRIVE_LIST,
            Action.REDRIVE_GET,
            Action.PATTERNS_GET,
        }
    ),
    "start/cancel redrive, put patterns": frozenset(
        {Action.REDRIVE_START, Action.REDRIVE_CANCEL, Action.PATTERNS_PUT}
    ),
    "edit a dead letter": frozenset({Action.DLQ_EDIT}),
    "save and delete a DLQ's filters, archive and restore dead letters": frozenset(
        {Action.DLQ_FILTERS, Action.DLQ_ARCHIVE}
    ),
    "list/get subscriptions": frozenset({Action.SUBSCRIPTION_READ}),
    "subscribe, change, unsubscribe": frozenset({Action.SUBSCRIPTION_MANAGE}),
    "share a queue": frozenset({Action.QUEUE_SHARE}),
    "manage the project's credentials": frozenset({Action.CREDENTIALS_MANAGE}),
    "create projects, server health": frozenset({Action.PROJECT_CREATE, Action.SERVER_HEALTH}),
}


def _documented_table() -> dict[tuple[Role, Action], bool]:
    """(role, action) -> may, read from the table in docs/security.md."""
    text = (Path(__file__).parents[2] / "docs" / "security.md").read_text()
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    header = next(line for line in lines if line.startswith("| operation |"))
    roles = [Role(c.strip()) for c in header.strip("|").split("|")[1:]]
    table: dict[tuple[Role, Action], bool] = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        row = [key for key in DOC_ROWS if cells[0].startswith(key)]
        if not row:
            continue
        (key,) = row
        for role, cell in zip(roles, cells[1:], strict=True):
            for action in DOC_ROWS[key]:
                table[(role, action)] = cell == "yes"
    return table


def test_the_rows_cover_every_action_once() -> None:
    named = [a for actions in DOC_ROWS.values() for a in actions]
    assert sorted(named) == sorted(Action)


def test_every_role_and_action_is_allowed_exactly_as_documented() -> None:
    """Not one role spot-checked: every role against every action, from the published table."""
    table = _documented_table()
    assert set(table) == {(r, a) for r in Role for a in Action}
    wrong = [(r.value, a.value) for (r, a), may in table.items() if allowed(r, a) is not may]
    assert wrong == []


def test_only_the_operator_crosses_projects_for_any_action() -> None:
    for role in Role:
        for action in Action:
            crosses = permits(role, "p1", "p2", action)
            assert crosses is (role is Role.OPERATOR), (role, action)
            assert permits(role, "p1", "p1", action) is allowed(role, action)


SPELLINGS = ["admin", "ADMIN", "Admin", "aDmIn"]
REFUSED = [
    " admin",
    "admin ",
    "admin\n",
    "ad min",
    "admin\x00",
    "\x00operator",
    "ＯＰＥＲＡＴＯＲ",  # noqa: RUF001 (full-width: the spelling under test)
    "operator\u200b",
    "\u212aeeper",
    "",
    "admins",
    "admi",
    "op-erator",
    None,
    1,
]


@pytest.mark.parametrize("text", SPELLINGS)
def test_a_role_is_named_by_its_letters_in_any_case(text: str) -> None:
    assert parse_role(text) is Role.ADMIN


@pytest.mark.parametrize("text", REFUSED)
def test_anything_else_names_no_role(text: object) -> None:
    with pytest.raises(UnknownChoice):
        parse_role(text)
