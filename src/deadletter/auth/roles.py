"""Roles, the operations of both faces, and the one table saying which role may do what.

A credential belongs to one project and holds one role. Project roles act only inside their
project; `operator` is server-wide: every operation, on every project, plus creating projects
and the server's own endpoints. Each face names its requests in its own words, and its own
table gives each the one `Action` it needs (a Zaqar route's row in `api/zaqar/routes.py`, an
SQS action's in `api/sqs/actions.py`), so a rule is written once, here.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import TypeVar

E = TypeVar("E", bound=StrEnum)

# The one spelling rule for every enum-like value that gates access (roles, signed-URL
# methods): printable ASCII letters and hyphens, compared without case. Anything else
# (whitespace, NUL, full-width or other look-alike letters) is refused, never folded: a
# folding rule that differs between where a value is stored and where it is checked is how
# "OPERATOR" once became an operator nobody had granted.
_CHOICE = re.compile(r"[A-Za-z][A-Za-z-]*")


class UnknownChoice(ValueError):
    """The text names none of a closed set of values."""


def parse_choice(kind: type[E], text: object, what: str) -> E:
    """The member of `kind` that `text` names, whatever the case; UnknownChoice otherwise.

    Every place that stores or compares such a value parses it here first and then works
    with the member only, so a check and the store can never disagree about a spelling.
    """
    if isinstance(text, str) and _CHOICE.fullmatch(text):
        for member in kind:
            if member.value.lower() == text.lower():
                return member
    names = ", ".join(m.value for m in kind)
    raise UnknownChoice(f"Unknown {what} {text!r}; the {what}s are {names}.")


class Role(StrEnum):
    ADMIN = "admin"
    PRODUCER = "producer"
    CONSUMER = "consumer"
    READER = "reader"
    OPERATOR = "operator"


def parse_role(text: object) -> Role:
    return parse_choice(Role, text, "role")


class Action(StrEnum):
    # Queues
    QUEUE_CREATE = "queue:create"
    QUEUE_DELETE = "queue:delete"
    QUEUE_LIST = "queue:list"
    QUEUE_GET = "queue:get"  # settings, URL, tags, dead-letter sources
    QUEUE_UPDATE = "queue:update"  # settings and tags
    QUEUE_PURGE = "queue:purge"
    QUEUE_STATS = "queue:stats"
    QUEUE_SHARE = "queue:share"  # issue a signed URL
    # Messages
    MESSAGE_SEND = "message:send"
    MESSAGE_CLAIM = "message:claim"  # claim, receive, read one's own claim
    MESSAGE_ACK = "message:ack"  # delete a received message
    MESSAGE_RELEASE = "message:release"  # release, nack
    MESSAGE_DEAD_LETTER = "message:dead-letter"  # reject to the DLQ
    MESSAGE_VISIBILITY = "message:visibility"  # change visibility, renew a claim
    MESSAGE_BROWSE = "message:browse"  # list without claiming
    MESSAGE_PEEK = "message:peek"  # read one message by id without claiming
    # Dead-letter queues
    DLQ_BROWSE = "dlq:browse"
    DLQ_EXPORT = "dlq:export"
    DLQ_EDIT = "dlq:edit"  # patch a dead letter's body or attributes
    DLQ_FILTERS = "dlq:filters"  # save and delete a DLQ's named filters
    DLQ_ARCHIVE = "dlq:archive"  # archive dead letters out of the active view, restore them
    REDRIVE_START = "redrive:start"
    REDRIVE_LIST = "redrive:list"
    REDRIVE_GET = "redrive:get"
    REDRIVE_CANCEL = "redrive:cancel"
    PATTERNS_GET = "patterns:get"
    PATTERNS_PUT = "patterns:put"
    # Subscriptions (webhooks notified of every message sent to a queue)
    SUBSCRIPTION_MANAGE = "subscription:manage"  # subscribe, change, unsubscribe
    SUBSCRIPTION_READ = "subscription:read"
    # Administration
    CREDENTIALS_MANAGE = "credentials:manage"
    PROJECT_CREATE = "project:create"
    SERVER_HEALTH = "server:health"


# Finding a queue (GetQueueUrl, GET of its settings) is something every client does before
# its real work, so every project role gets QUEUE_GET and QUEUE_LIST.
_LOOKUP = frozenset({Action.QUEUE_GET, Action.QUEUE_LIST})

# Server-wide actions: only the operator, never a project's admin.
SERVER_ACTIONS = frozenset({Action.PROJECT_CREATE, Action.SERVER_HEALTH})

PERMISSIONS: dict[Role, frozenset[Action]] = {
    Role.OPERATOR: frozenset(Action),
    Role.ADMIN: frozenset(Action) - SERVER_ACTIONS,
    Role.PRODUCER: _LOOKUP | {Action.MESSAGE_SEND},
    Role.CONSUMER: _LOOKUP
    | {
        Action.MESSAGE_CLAIM,
        Action.MESSAGE_ACK,
        Action.MESSAGE_RELEASE,
        Action.MESSAGE_DEAD_LETTER,
        Action.MESSAGE_VISIBILITY,
    },
    Role.READER: _LOOKUP
    | {
        Action.MESSAGE_BROWSE,
        Action.MESSAGE_PEEK,
        Action.QUEUE_STATS,
        Action.DLQ_BROWSE,
        Action.DLQ_EXPORT,
        Action.REDRIVE_LIST,
        Action.REDRIVE_GET,
        Action.PATTERNS_GET,
        Action.SUBSCRIPTION_READ,
    },
}


def allowed(role: Role, action: Action) -> bool:
    return action in PERMISSIONS[role]


def permits(role: Role, own_project: str, target_project: str, action: Action) -> bool:
    """Whether a credential of `role` in `own_project` may do `action` in `target_project`.

    Only the operator crosses projects; a project admin's "everything" stops at its project.
    """
    if role is not Role.OPERATOR and own_project != target_project:
        return False
    return allowed(role, action)


def as_get(method: str) -> str:
    """The method whose rules a request follows: HEAD is GET without the body (RFC 9110
    9.3.2), so it needs exactly what GET needs."""
    upper = method.upper()
    return "GET" if upper == "HEAD" else upper
