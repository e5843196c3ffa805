"""The SQS face's action table: one row per action, by its AWS name.

Each action takes the request's parameters in the JSON protocol's shape and returns the
result in that shape; `wire` turns both into either protocol. A row names the action's
handler, the `auth.roles.Action` a credential must allow to call it, and how it runs: all are
synchronous but ReceiveMessage, which long-polls on the event loop; the message actions
(`bounded`), whose work is one batch at most, run on the event loop too when the store need
not wait for it (`api.threads.on_loop`); the others in a worker thread.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
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
from deadletter.auth.roles import Action as Permission

__all__ = ["ASYNC_ACTIONS", "OPERATIONS", "SYNC_ACTIONS", "Action", "Call", "Operation"]

AsyncAction = Callable[[Call], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Operation:
    """One action of the SQS face."""

    name: str  # as AWS spells it (`X-Amz-Target`, `Action=`)
    handler: Action | AsyncAction
    permission: Permission  # what a credential's role must allow
    bounded: bool = False  # a message action: one batch at most, run on the loop if it can
    is_async: bool = field(init=False)  # long-polls on the loop (ReceiveMessage)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.handler))


P = Permission
OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in [
        Operation("CreateQueue", create_queue, P.QUEUE_CREATE),
        Operation("GetQueueUrl", get_queue_url, P.QUEUE_GET),
        Operation("ListQueues", list_queues, P.QUEUE_LIST),
        Operation("DeleteQueue", delete_queue, P.QUEUE_DELETE),
        Operation("GetQueueAttributes", get_queue_attributes, P.QUEUE_GET),
        Operation("SetQueueAttributes", set_queue_attributes, P.QUEUE_UPDATE),
        Operation("TagQueue", tag_queue, P.QUEUE_UPDATE),
        Operation("UntagQueue", untag_queue, P.QUEUE_UPDATE),
        Operation("ListQueueTags", list_queue_tags, P.QUEUE_GET),
        Operation("PurgeQueue", purge_queue, P.QUEUE_PURGE),
        Operation("ListDeadLetterSourceQueues", list_dead_letter_source_queues, P.QUEUE_GET),
        Operation("SendMessage", send_message, P.MESSAGE_SEND, bounded=True),
        Operation("SendMessageBatch", send_message_batch, P.MESSAGE_SEND, bounded=True),
        Operation("ReceiveMessage", receive_message, P.MESSAGE_CLAIM),
        Operation("DeleteMessage", delete_message, P.MESSAGE_ACK, bounded=True),
        Operation("DeleteMessageBatch", delete_message_batch, P.MESSAGE_ACK, bounded=True),
        Operation(
            "ChangeMessageVisibility",
            change_message_visibility,
            P.MESSAGE_VISIBILITY,
            bounded=True,
        ),
        Operation(
            "ChangeMessageVisibilityBatch",
            change_message_visibility_batch,
            P.MESSAGE_VISIBILITY,
            bounded=True,
        ),
        Operation("StartMessageMoveTask", start_message_move_task, P.REDRIVE_START),
        Operation("CancelMessageMoveTask", cancel_message_move_task, P.REDRIVE_CANCEL),
        Operation("ListMessageMoveTasks", list_message_move_tasks, P.REDRIVE_LIST),
        # The queue's policy is one of its attributes: changing it updates the queue.
        Operation("AddPermission", add_permission, P.QUEUE_UPDATE),
        Operation("RemovePermission", remove_permission, P.QUEUE_UPDATE),
    ]
}

# The table by how the actions run, for those that list them so.
SYNC_ACTIONS: dict[str, Action] = {
    name: op.handler  # type: ignore[misc]
    for name, op in OPERATIONS.items()
    if not op.is_async
}
ASYNC_ACTIONS: dict[str, AsyncAction] = {
    name: op.handler  # type: ignore[misc]
    for name, op in OPERATIONS.items()
    if op.is_async
}
