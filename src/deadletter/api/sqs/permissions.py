"""SQS AddPermission and RemovePermission: statements of the queue's `Policy` attribute,
written as AWS writes them. The policy is stored and shown, not enforced (docs/sqs.md)."""

from __future__ import annotations

import json
from typing import Any

from deadletter.api.sqs import attributes as attrs
from deadletter.api.sqs.call import Call
from deadletter.api.sqs.errors import (
    SqsError,
    invalid_value,
    missing_parameter,
)
from deadletter.api.strict_json import InvalidJson, loads
from deadletter.domain import names
from deadletter.domain.model import Queue, QueueSettings

MAX_ACTIONS = 7
MAX_STATEMENTS = 20  # AWS's limit of permissions per queue policy
# What AddPermission may grant; the other actions are the queue owner's alone.
SHARED = frozenset(
    {
        "*",
        "ChangeMessageVisibility",
        "DeleteMessage",
        "GetQueueAttributes",
        "GetQueueUrl",
        "ListDeadLetterSourceQueues",
        "PurgeQueue",
        "ReceiveMessage",
        "SendMessage",
        "StartMessageMoveTask",
        "CancelMessageMoveTask",
        "ListMessageMoveTasks",
    }
)
OWNER_ONLY = frozenset(
    {
        "AddPermission",
        "CreateQueue",
        "DeleteQueue",
        "ListQueues",
        "ListQueueTags",
        "RemovePermission",
        "SetQueueAttributes",
        "TagQueue",
        "UntagQueue",
    }
)


def _label(call: Call) -> str:
    label = call.text("Label")
    assert label is not None
    if not names.PERMISSION_LABEL.valid(label):
        raise invalid_value(
            label,
            "Label",
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
        )
    return label


def _policy(queue: Queue, arn: str) -> dict[str, Any]:
    """The queue's policy document, or AWS's empty default one."""
    raw = queue.settings.extra.get("Policy")
    doc: Any = None
    if raw:
        try:
            doc = loads(raw)
        except InvalidJson:
            doc = None
    if not isinstance(doc, dict):
        doc = {"Version": "2012-10-17", "Id": f"{arn}/SQSDefaultPolicy"}
    if not isinstance(doc.get("Statement"), list):
        doc["Statement"] = [doc["Statement"]] if isinstance(doc.get("Statement"), dict) else []
    policy: dict[str, Any] = doc
    return policy


def _with_policy(queue: Queue, doc: dict[str, Any] | None) -> QueueSettings:
    extra = dict(queue.settings.extra)
    if doc is None:
        extra.pop("Policy", None)
    else:
        text = json.dumps(doc, separators=(",", ":"))
        if len(text.encode()) > attrs.MAX_POLICY:
            raise SqsError("OverLimit", f"Policy exceeds the limit of {attrs.MAX_POLICY} bytes.")
        extra["Policy"] = text
    return queue.settings.with_changes(extra=extra)


def _check_accounts(accounts: list[str]) -> None:
    """AddPermission's AWSAccountIds, each an account id, as SQS checks them."""
    if not accounts:
        raise invalid_value("[]", "PrincipalId", "Unable to verify.")
    for account in accounts:
        if not names.ACCOUNT.valid(account):
            raise invalid_value(f"[{account}]", "PrincipalId", "Unable to verify.")


def _check_actions(actions: list[str]) -> None:
    """AddPermission's Actions, each one an owner may share, as SQS checks them."""
    if not actions:
        raise missing_parameter("Actions")
    if len(actions) > MAX_ACTIONS:
        raise SqsError(
            "OverLimit", f"{len(actions)} Actions were found, maximum allowed is {MAX_ACTIONS}."
        )
    for action in actions:
        if action in OWNER_ONLY:
            raise invalid_value(
                f"SQS:{action}",
                "ActionName",
                "Only the queue owner is allowed to invoke this action.",
            )
        if action not in SHARED:
            raise invalid_value(
                f"SQS:{action}",
                "ActionName",
                "Please refer to the appropriate WSDL for a list of valid actions. ",
            )


def add_permission(call: Call) -> dict[str, Any]:
    name = call.queue()
    label = _label(call)
    if call.params.get("AWSAccountIds") is None:
        raise missing_parameter("AWSAccountIds")
    accounts = call.names("AWSAccountIds")
    actions = call.names("Actions")
    _check_accounts(accounts)
    _check_actions(actions)
    arn = call.arn(name)
    principals = [f"arn:aws:iam::{a}:root" for a in accounts]
    granted = [f"SQS:{a}" for a in actions]
    statement = {
        "Sid": label,
        "Effect": "Allow",
        "Principal": {"AWS": principals[0] if len(principals) == 1 else principals},
        "Action": granted[0] if len(granted) == 1 else granted,
        "Resource": arn,
    }

    def added(queue: Queue) -> QueueSettings:
        doc = _policy(queue, arn)
        if any(s.get("Sid") == label for s in doc["Statement"] if isinstance(s, dict)):
            raise invalid_value(label, "Label", "Already exists.")
        if len(doc["Statement"]) >= MAX_STATEMENTS:
            raise SqsError(
                "OverLimit",
                f"{len(doc['Statement']) + 1} Permissions were found, maximum allowed is"
                f" {MAX_STATEMENTS}.",
            )
        doc["Statement"].append(statement)
        return _with_policy(queue, doc)

    call.engine.change_settings(call.project, name, change=added)
    return {}


def remove_permission(call: Call) -> dict[str, Any]:
    name = call.queue()
    label = _label(call)
    arn = call.arn(name)

    def removed(queue: Queue) -> QueueSettings:
        doc = _policy(queue, arn)
        kept = [s for s in doc["Statement"] if not (isinstance(s, dict) and s.get("Sid") == label)]
        if len(kept) == len(doc["Statement"]):
            raise invalid_value(label, "Label", "can't find label on existing policy.")
        doc["Statement"] = kept
        return _with_policy(queue, doc if kept else None)

    call.engine.change_settings(call.project, name, change=removed)
    return {}
