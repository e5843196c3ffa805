"""The SQS actions by name: each takes the request's parameters in the JSON protocol's shape
and returns the result in that shape; `wire` turns both into either protocol.

All are synchronous except ReceiveMessage, which long-polls on the event loop. The message
actions (`BOUNDED`), whose work is one batch at most, run on the event loop too when the
store need not wait for it (`api.threads.on_loop`); the others in a worker thread.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from deadletter.api.sqs.call import Action, Call
from deadletter.api.sqs.messages import (
    change_message_visibility,
    change_message_visibility_batch,
    delete_message,
    delete_message_batch,
    receive_message,
    send_message,
    send_message_batch,
)
from deadletter.api.sqs.move_tasks import (
    cancel_message_move_task,
    list_message_move_tasks,
    start_message_move_task,
)
from deadletter.api.sqs.permissions import add_permission, remove_permission
from deadletter.api.sqs.queues import (
    create_queue,
    delete_queue,
    get_queue_attributes,
    get_queue_url,
    list_dead_letter_source_queues,
    list_queue_tags,
    list_queues,
    purge_queue,
    set_queue_attributes,
    tag_queue,
    untag_queue,
)

__all__ = ["ASYNC_ACTIONS", "BOUNDED", "SYNC_ACTIONS", "Action", "Call"]

SYNC_ACTIONS: dict[str, Action] = {
    "CreateQueue": create_queue,
    "GetQueueUrl": get_queue_url,
    "ListQueues": list_queues,
    "DeleteQueue": delete_queue,
    "GetQueueAttributes": get_queue_attributes,
    "SetQueueAttributes": set_queue_attributes,
    "TagQueue": tag_queue,
    "UntagQueue": untag_queue,
    "ListQueueTags": list_queue_tags,
    "PurgeQueue": purge_queue,
    "ListDeadLetterSourceQueues": list_dead_letter_source_queues,
    "SendMessage": send_message,
    "SendMessageBatch": send_message_batch,
    "DeleteMessage": delete_message,
    "DeleteMessageBatch": delete_message_batch,
    "ChangeMessageVisibility": change_message_visibility,
    "ChangeMessageVisibilityBatch": change_message_visibility_batch,
    "StartMessageMoveTask": start_message_move_task,
    "CancelMessageMoveTask": cancel_message_move_task,
    "ListMessageMoveTasks": list_message_move_tasks,
    "AddPermission": add_permission,
    "RemovePermission": remove_permission,
}
ASYNC_ACTIONS: dict[str, Callable[[Call], Awaitable[dict[str, Any]]]] = {
    "ReceiveMessage": receive_message,
}
# The synchronous actions whose work is one batch of messages at most.
BOUNDED: frozenset[str] = frozenset(
    {
        "SendMessage",
        "SendMessageBatch",
        "DeleteMessage",
        "DeleteMessageBatch",
        "ChangeMessageVisibility",
        "ChangeMessageVisibilityBatch",
    }
)
