"""The parameters each SQS action takes, and the refusal of any other before the action runs.

Named as botocore's service model names them (tests/api/sqs/test_unknown_parameters.py
compares the two), in the JSON protocol's shape, which `wire.parse_query` gives the query
protocol's fields too (`Attribute.1.Name` -> `Attributes`, `Tag.1.Key` -> `Tags`). AWS
ignores a parameter it does not know; here it is refused (`InvalidParameterValue`, naming
it and the one it is closest to), as every request of the Zaqar face is: a misspelled
parameter would otherwise be an option silently not taken.
"""

from __future__ import annotations

from typing import Any

from deadletter.api.sqs.errors import invalid_parameter
from deadletter.api.strict_json import unknown_name

_URL = "QueueUrl"
_PAGE = ("NextToken", "MaxResults")
_SEND = (
    "MessageBody",
    "DelaySeconds",
    "MessageAttributes",
    "MessageSystemAttributes",
    "MessageDeduplicationId",
    "MessageGroupId",
)

# Parameters of this server's own beyond botocore's model: StartMessageMoveTask's
# `DeadLetterFilter`, the native API's dead-letter filter as one query string
# (`error_class=KeyError&older_than=1h`, docs/sqs.md).
EXTENSIONS = frozenset({"DeadLetterFilter"})

PARAMETERS: dict[str, frozenset[str]] = {
    # `tags` is the JSON protocol's name, `Tags` what the query protocol's `Tag.N` becomes.
    "CreateQueue": frozenset({"QueueName", "Attributes", "tags", "Tags"}),
    "GetQueueUrl": frozenset({"QueueName", "QueueOwnerAWSAccountId"}),
    "ListQueues": frozenset({"QueueNamePrefix", *_PAGE}),
    "DeleteQueue": frozenset({_URL}),
    "GetQueueAttributes": frozenset({_URL, "AttributeNames"}),
    "SetQueueAttributes": frozenset({_URL, "Attributes"}),
    "TagQueue": frozenset({_URL, "Tags"}),
    "UntagQueue": frozenset({_URL, "TagKeys"}),
    "ListQueueTags": frozenset({_URL}),
    "PurgeQueue": frozenset({_URL}),
    "ListDeadLetterSourceQueues": frozenset({_URL, *_PAGE}),
    "SendMessage": frozenset({_URL, *_SEND}),
    "SendMessageBatch": frozenset({_URL, "Entries"}),
    "ReceiveMessage": frozenset(
        {
            _URL,
            "AttributeNames",
            "MessageSystemAttributeNames",
            "MessageAttributeNames",
            "MaxNumberOfMessages",
            "VisibilityTimeout",
            "WaitTimeSeconds",
            "ReceiveRequestAttemptId",
        }
    ),
    "DeleteMessage": frozenset({_URL, "ReceiptHandle"}),
    "DeleteMessageBatch": frozenset({_URL, "Entries"}),
    "ChangeMessageVisibility": frozenset({_URL, "ReceiptHandle", "VisibilityTimeout"}),
    "ChangeMessageVisibilityBatch": frozenset({_URL, "Entries"}),
    "StartMessageMoveTask": frozenset(
        {"SourceArn", "DestinationArn", "MaxNumberOfMessagesPerSecond", *EXTENSIONS}
    ),
    "CancelMessageMoveTask": frozenset({"TaskHandle"}),
    "ListMessageMoveTasks": frozenset({"SourceArn", "MaxResults"}),
    "AddPermission": frozenset({_URL, "Label", "AWSAccountIds", "Actions"}),
    "RemovePermission": frozenset({_URL, "Label"}),
}
# The fields of one entry of each batch action.
ENTRY_FIELDS: dict[str, frozenset[str]] = {
    "SendMessageBatch": frozenset({"Id", *_SEND}),
    "DeleteMessageBatch": frozenset({"Id", "ReceiptHandle"}),
    "ChangeMessageVisibilityBatch": frozenset({"Id", "ReceiptHandle", "VisibilityTimeout"}),
}


def check_known(given: Any, known: frozenset[str], what: str = "parameter") -> None:
    """Refuse the first name of `given` (a dict's keys) that is not in `known`."""
    if isinstance(given, dict):
        refused = unknown_name(given, known, what)
        if refused is not None:
            raise invalid_parameter(refused)


def check_parameters(action: str, params: dict[str, Any]) -> None:
    """Refuse a parameter `action` does not take, and a field its batch entries do not."""
    known = PARAMETERS.get(action)
    if known is None:
        return
    check_known(params, known)
    fields = ENTRY_FIELDS.get(action)
    entries = params.get("Entries")
    if fields is not None and isinstance(entries, list):
        for entry in entries:
            check_known(entry, fields, f"{action}RequestEntry field")
