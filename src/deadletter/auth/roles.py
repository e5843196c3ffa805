"""Roles, the operations of both faces, and the one table saying which role may do what.

A credential belongs to one project and holds one role. Project roles act only inside their
project; `operator` is server-wide: every operation, on every project, plus creating projects
and the server's own endpoints. Each face names its requests in its own words (an SQS action
name, a Zaqar route); both are mapped here onto one `Action`, so a rule is written once.
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


# Every action the SQS face implements, by its AWS name.
SQS_ACTIONS: dict[str, Action] = {
    "CreateQueue": Action.QUEUE_CREATE,
    "GetQueueUrl": Action.QUEUE_GET,
    "ListQueues": Action.QUEUE_LIST,
    "DeleteQueue": Action.QUEUE_DELETE,
    "GetQueueAttributes": Action.QUEUE_GET,
    "SetQueueAttributes": Action.QUEUE_UPDATE,
    "TagQueue": Action.QUEUE_UPDATE,
    "UntagQueue": Action.QUEUE_UPDATE,
    "AddPermission": Action.QUEUE_UPDATE,
    "RemovePermission": Action.QUEUE_UPDATE,
    "ListQueueTags": Action.QUEUE_GET,
    "PurgeQueue": Action.QUEUE_PURGE,
    "ListDeadLetterSourceQueues": Action.QUEUE_GET,
    "SendMessage": Action.MESSAGE_SEND,
    "SendMessageBatch": Action.MESSAGE_SEND,
    "ReceiveMessage": Action.MESSAGE_CLAIM,
    "DeleteMessage": Action.MESSAGE_ACK,
    "DeleteMessageBatch": Action.MESSAGE_ACK,
    "ChangeMessageVisibility": Action.MESSAGE_VISIBILITY,
    "ChangeMessageVisibilityBatch": Action.MESSAGE_VISIBILITY,
    "StartMessageMoveTask": Action.REDRIVE_START,
    "CancelMessageMoveTask": Action.REDRIVE_CANCEL,
    "ListMessageMoveTasks": Action.REDRIVE_LIST,
}

# Every Zaqar v2 route that needs a credential, by (method, path template). Routes absent
# here (`/`, `/v2`, `/v2/ping`) are public, as in Zaqar.
_Q = "/v2/queues/{queue}"
_M = _Q + "/messages/{message_id}"
ZAQAR_ROUTES: dict[tuple[str, str], Action] = {
    ("GET", "/v2/health"): Action.SERVER_HEALTH,
    ("GET", "/v2/queues"): Action.QUEUE_LIST,
    # Queue templates set what new queues get: reading them is a lookup, changing them an update.
    ("GET", "/v2/templates"): Action.QUEUE_LIST,
    ("PUT", "/v2/templates/{template}"): Action.QUEUE_UPDATE,
    ("GET", "/v2/templates/{template}"): Action.QUEUE_GET,
    ("PATCH", "/v2/templates/{template}"): Action.QUEUE_UPDATE,
    ("DELETE", "/v2/templates/{template}"): Action.QUEUE_UPDATE,
    ("PUT", _Q): Action.QUEUE_CREATE,
    ("GET", _Q): Action.QUEUE_GET,
    ("PATCH", _Q): Action.QUEUE_UPDATE,
    ("DELETE", _Q): Action.QUEUE_DELETE,
    ("GET", _Q + "/stats"): Action.QUEUE_STATS,
    ("POST", _Q + "/purge"): Action.QUEUE_PURGE,
    ("POST", _Q + "/share"): Action.QUEUE_SHARE,
    ("POST", _Q + "/messages"): Action.MESSAGE_SEND,
    ("GET", _Q + "/messages"): Action.MESSAGE_BROWSE,
    # ?ids= deletes messages (an ack); ?pop=N claims and deletes: see zaqar_action.
    ("DELETE", _Q + "/messages"): Action.MESSAGE_ACK,
    ("GET", _M): Action.MESSAGE_PEEK,
    ("DELETE", _M): Action.MESSAGE_ACK,
    ("POST", _M + "/dead_letter"): Action.MESSAGE_DEAD_LETTER,
    ("POST", _M + "/release"): Action.MESSAGE_RELEASE,
    ("POST", _Q + "/claims"): Action.MESSAGE_CLAIM,
    ("GET", _Q + "/claims/{claim_id}"): Action.MESSAGE_CLAIM,
    ("PATCH", _Q + "/claims/{claim_id}"): Action.MESSAGE_VISIBILITY,
    ("DELETE", _Q + "/claims/{claim_id}"): Action.MESSAGE_RELEASE,
    ("POST", _Q + "/dead_letter"): Action.MESSAGE_DEAD_LETTER,
    ("GET", _Q + "/dead_letters"): Action.DLQ_BROWSE,
    ("GET", _Q + "/dead_letters/count"): Action.DLQ_BROWSE,
    # Deleting the dead letters a filter selects is a purge of part of the queue.
    ("DELETE", _Q + "/dead_letters"): Action.QUEUE_PURGE,
    ("PATCH", _Q + "/dead_letters/{message_id}"): Action.DLQ_EDIT,
    ("GET", _Q + "/dead_letter_sources"): Action.QUEUE_GET,
    ("POST", _Q + "/redrives"): Action.REDRIVE_START,
    ("GET", _Q + "/redrives"): Action.REDRIVE_LIST,
    ("GET", _Q + "/redrives/{task_id}"): Action.REDRIVE_GET,
    ("DELETE", _Q + "/redrives/{task_id}"): Action.REDRIVE_CANCEL,
    # Resuming moves messages, as starting does.
    ("POST", _Q + "/redrives/{task_id}/resume"): Action.REDRIVE_START,
    ("PUT", _Q + "/patterns"): Action.PATTERNS_PUT,
    ("GET", _Q + "/patterns"): Action.PATTERNS_GET,
    # Merging a batch changes the stored patterns, as storing them does.
    ("POST", _Q + "/patterns/assignments"): Action.PATTERNS_PUT,
    ("POST", _Q + "/subscriptions"): Action.SUBSCRIPTION_MANAGE,
    ("GET", _Q + "/subscriptions"): Action.SUBSCRIPTION_READ,
    ("GET", _Q + "/subscriptions/{subscription_id}"): Action.SUBSCRIPTION_READ,
    ("PATCH", _Q + "/subscriptions/{subscription_id}"): Action.SUBSCRIPTION_MANAGE,
    ("DELETE", _Q + "/subscriptions/{subscription_id}"): Action.SUBSCRIPTION_MANAGE,
    ("PUT", _Q + "/subscriptions/{subscription_id}/confirm"): Action.SUBSCRIPTION_MANAGE,
    # Consumer tags are a queue's consumer groups: making them changes the queue; reading
    # them (with their counts) is its stats.
    ("GET", _Q + "/tags"): Action.QUEUE_STATS,
    ("PUT", _Q + "/tags/{tag}"): Action.QUEUE_UPDATE,
    ("GET", _Q + "/tags/{tag}"): Action.QUEUE_STATS,
    ("DELETE", _Q + "/tags/{tag}"): Action.QUEUE_UPDATE,
}

PUBLIC_ZAQAR_ROUTES = frozenset(
    {("GET", "/"), ("GET", "/v2"), ("GET", "/v2/"), ("GET", "/v2/ping")}
)


def as_get(method: str) -> str:
    """The method whose rules a request follows: HEAD is GET without the body (RFC 9110
    9.3.2), so it needs exactly what GET needs."""
    upper = method.upper()
    return "GET" if upper == "HEAD" else upper


def zaqar_action(method: str, template: str, params: dict[str, str]) -> Action | None:
    """The action of a Zaqar request, or None for a public route.

    An unmapped route raises KeyError, so a route added to the face without a rule here
    fails loudly instead of going unprotected.

    The few routes whose meaning depends on a query parameter are decided here: a
    `DELETE .../messages?pop=N` takes messages (a claim), `GET .../messages?ids=` reads
    chosen messages (a peek).
    """
    key = (as_get(method), template)
    if key in PUBLIC_ZAQAR_ROUTES:
        return None
    action = ZAQAR_ROUTES[key]
    if action is Action.MESSAGE_ACK and template.endswith("/messages") and params.get("pop"):
        # Popping is claim-and-delete; every role that may claim may also ack.
        return Action.MESSAGE_CLAIM
    if action is Action.MESSAGE_BROWSE and params.get("ids"):
        return Action.MESSAGE_PEEK
    return action
