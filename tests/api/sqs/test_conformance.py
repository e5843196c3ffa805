"""Conformance with AWS SQS as botocore's service model and AWS's documentation describe it,
in both wire protocols on each store: every action of the model is answered; the smallest
request the model allows succeeds and its answer has the model's shape; each required member
left out is refused as AWS refuses it; every enum value is accepted; AWS's documented limits
hold at their edges, with AWS's codes, statuses, faults and words.

The requests are sent by botocore with its own parameter validation off, so that what the
model forbids reaches the server and is refused there, in either protocol."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from deadletter.api.sqs.actions import ASYNC_ACTIONS, SYNC_ACTIONS
from tests.api.sqs.conftest import ACCOUNT, arn, client
from tests.support.sqs_query import json_model

MODEL = json_model()
SHAPES = MODEL["shapes"]
OPERATIONS = sorted(MODEL["operations"])
LOOSE = Config(parameter_validation=False, retries={"max_attempts": 1})


def _input(operation: str) -> dict[str, Any]:
    shape: dict[str, Any] = SHAPES[MODEL["operations"][operation]["input"]["shape"]]
    return shape


def _output(operation: str) -> dict[str, Any]:
    spec = MODEL["operations"][operation].get("output")
    return SHAPES[spec["shape"]] if spec else {"members": {}}


class World:
    """A queue `conf` whose DLQ is `conf-dlq`, a message received from it, and the smallest
    request of every action the model allows, against them."""

    def __init__(self, sqs: Any) -> None:
        self.sqs = sqs
        self.dlq_url = sqs.create_queue(QueueName="conf-dlq")["QueueUrl"]
        policy = json.dumps({"deadLetterTargetArn": arn("conf-dlq"), "maxReceiveCount": 5})
        self.url = sqs.create_queue(QueueName="conf", Attributes={"RedrivePolicy": policy})[
            "QueueUrl"
        ]
        self.spare_url = sqs.create_queue(QueueName="conf-spare")["QueueUrl"]
        sqs.send_message(QueueUrl=self.url, MessageBody="m")
        self.handle = sqs.receive_message(QueueUrl=self.url)["Messages"][0]["ReceiptHandle"]

    def moving_task(self) -> str:
        """The handle of a move task still running: five dead letters at one a second."""
        for n in range(5):
            self.sqs.send_message(QueueUrl=self.dlq_url, MessageBody=f"dead {n}")
        handle: str = self.sqs.start_message_move_task(
            SourceArn=arn("conf-dlq"), DestinationArn=arn("conf"), MaxNumberOfMessagesPerSecond=1
        )["TaskHandle"]
        return handle

    def minimal(self, operation: str) -> dict[str, Any]:
        """Exactly the model's required members, valid, for `operation`."""
        q = {"QueueUrl": self.url}
        if operation == "RemovePermission":
            self.sqs.add_permission(
                QueueUrl=self.url, Label="conf", AWSAccountIds=[ACCOUNT], Actions=["SendMessage"]
            )
        if operation == "UntagQueue":
            self.sqs.tag_queue(QueueUrl=self.url, Tags={"k": "v"})
        table: dict[str, Callable[[], dict[str, Any]]] = {
            "AddPermission": lambda: {
                **q,
                "Label": "conf",
                "AWSAccountIds": ["111122223333"],
                "Actions": ["SendMessage"],
            },
            "CancelMessageMoveTask": lambda: {"TaskHandle": self.moving_task()},
            "ChangeMessageVisibility": lambda: {
                **q,
                "ReceiptHandle": self.handle,
                "VisibilityTimeout": 10,
            },
            "ChangeMessageVisibilityBatch": lambda: {
                **q,
                "Entries": [{"Id": "a", "ReceiptHandle": self.handle, "VisibilityTimeout": 10}],
            },
            "CreateQueue": lambda: {"QueueName": "conf-new"},
            "DeleteMessage": lambda: {**q, "ReceiptHandle": self.handle},
            "DeleteMessageBatch": lambda: {
                **q,
                "Entries": [{"Id": "a", "ReceiptHandle": self.handle}],
            },
            "DeleteQueue": lambda: {"QueueUrl": self.spare_url},
            "GetQueueAttributes": lambda: q,
            "GetQueueUrl": lambda: {"QueueName": "conf"},
            "ListDeadLetterSourceQueues": lambda: {"QueueUrl": self.dlq_url},
            "ListMessageMoveTasks": lambda: {"SourceArn": arn("conf-dlq")},
            "ListQueueTags": lambda: q,
            "ListQueues": lambda: {},
            "PurgeQueue": lambda: q,
            "ReceiveMessage": lambda: q,
            "RemovePermission": lambda: {**q, "Label": "conf"},
            "SendMessage": lambda: {**q, "MessageBody": "hello"},
            "SendMessageBatch": lambda: {**q, "Entries": [{"Id": "a", "MessageBody": "hello"}]},
            "SetQueueAttributes": lambda: {**q, "Attributes": {"VisibilityTimeout": "31"}},
            "StartMessageMoveTask": lambda: {"SourceArn": arn("conf-dlq")},
            "TagQueue": lambda: {**q, "Tags": {"k": "v"}},
            "UntagQueue": lambda: {**q, "TagKeys": ["k"]},
        }
        return table[operation]()


@pytest.fixture
def loose(server_url: str, protocol: str) -> Any:
    """A client in one protocol that sends whatever it is given."""
    return client(server_url, protocol=protocol, config=LOOSE)


@pytest.fixture
def world(loose: Any) -> World:
    return World(loose)


def _call(sqs: Any, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    methods = {api: method for method, api in sqs.meta.method_to_api_mapping.items()}
    result: dict[str, Any] = getattr(sqs, methods[operation])(**params)
    return result


def _refused(sqs: Any, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    """The error AWS's way: code, HTTP status, fault and message."""
    with pytest.raises(ClientError) as exc:
        _call(sqs, operation, params)
    error = exc.value.response["Error"]
    return {
        "code": error["Code"],
        "status": exc.value.response["ResponseMetadata"]["HTTPStatusCode"],
        "type": error.get("Type"),
        "message": error["Message"],
    }


# 1. The model, action by action --------------------------------------------------------


def test_every_action_of_the_model_is_answered() -> None:
    assert set(OPERATIONS) == set(SYNC_ACTIONS) | set(ASYNC_ACTIONS)


@pytest.mark.parametrize("operation", OPERATIONS)
def test_the_smallest_requests_are_the_models_required_members(operation: str) -> None:
    """The table below is the model's, not a guess: exactly the required members, and in
    batch entries the entry's required members."""
    world = World.__new__(World)
    world.url = world.dlq_url = world.spare_url = "u"
    world.handle = "h"
    world.sqs = _NoCalls()
    world.moving_task = lambda: "t"  # type: ignore[method-assign]
    params = world.minimal(operation)
    shape = _input(operation)
    assert set(params) == set(shape.get("required", []))
    if "Entries" in params:
        entry = SHAPES[SHAPES[shape["members"]["Entries"]["shape"]]["member"]["shape"]]
        assert set(entry["required"]) <= set(params["Entries"][0])


class _NoCalls:
    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda **kwargs: None


@pytest.mark.parametrize("operation", OPERATIONS)
def test_the_smallest_request_succeeds_with_an_answer_of_the_models_shape(
    loose: Any, world: World, operation: str
) -> None:
    result = _call(loose, operation, world.minimal(operation))
    output = _output(operation)
    got = {k for k in result if k != "ResponseMetadata"}
    assert got <= set(output["members"])
    if operation in ("SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch"):
        assert [e["Id"] for e in result["Successful"]] == ["a"]
        assert not result.get("Failed")
    for member in ("QueueUrl", "TaskHandle", "MessageId", "MD5OfMessageBody"):
        if member in output["members"] and operation != "ListQueues":
            assert isinstance(result.get(member), str) and result[member]


# Where AWS answers a missing required member otherwise than MissingParameter naming it.
_MISSING = {
    "Entries": lambda op: (
        "AWS.SimpleQueueService.EmptyBatchRequest",
        f"There should be at least one {op}RequestEntry in the request.",
    ),
    "TagKeys": lambda op: (
        "InvalidParameterValue",
        "Tag keys must be between 1 and 128 characters in length.",
    ),
}


@pytest.mark.parametrize(
    "operation", [op for op in OPERATIONS if _input(op).get("required")], ids=str
)
def test_each_required_member_left_out_is_refused(loose: Any, world: World, operation: str) -> None:
    params = world.minimal(operation)
    for member in _input(operation)["required"]:
        got = _refused(loose, operation, {k: v for k, v in params.items() if k != member})
        code, message = _MISSING.get(
            member,
            lambda op, m=member: (
                "MissingParameter",
                f"The request must contain the parameter {m}.",
            ),
        )(operation)
        assert got == {"code": code, "status": 400, "type": "Sender", "message": message}, member


# 2. Enums ---------------------------------------------------------------------------------


def test_every_queue_attribute_name_of_the_model_can_be_asked_for(loose: Any) -> None:
    url = loose.create_queue(QueueName="enum.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    loose.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps({"Statement": []})})
    names = SHAPES["QueueAttributeName"]["enum"]
    for name in names:
        attributes = loose.get_queue_attributes(QueueUrl=url, AttributeNames=[name])
        assert set(attributes.get("Attributes", {})) <= set(names)
    everything = loose.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    unshown = {"All", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "RedriveAllowPolicy"}
    assert set(everything) == set(names) - unshown - {"RedrivePolicy"}
    assert _refused(
        loose, "GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["Bogus"]}
    ) == {
        "code": "InvalidAttributeName",
        "status": 400,
        "type": "Sender",
        "message": "Unknown Attribute Bogus.",
    }


def test_every_message_system_attribute_name_of_the_model_can_be_asked_for(loose: Any) -> None:
    url = loose.create_queue(QueueName="sys", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
    loose.send_message(QueueUrl=url, MessageBody="x")
    names = SHAPES["MessageSystemAttributeName"]["enum"]
    for name in names:
        got = loose.receive_message(QueueUrl=url, MessageSystemAttributeNames=[name])
        (message,) = got["Messages"]
        assert set(message.get("Attributes", {})) <= set(names) - {"All"}
        if name in ("SenderId", "SentTimestamp", "ApproximateReceiveCount"):
            assert set(message["Attributes"]) == {name}


# 3. AWS's documented limits and refusals, word for word ------------------------------------

_INVALID = "InvalidParameterValue"
BIG = "x" * (1_048_576 + 1)
LIMITS: list[tuple[str, str, dict[str, Any], tuple[str, int, str]]] = [
    (
        "eleven messages at once",
        "ReceiveMessage",
        {"MaxNumberOfMessages": 11},
        (
            _INVALID,
            400,
            "Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1"
            " and 10, if provided.",
        ),
    ),
    (
        "a wait of 21 s",
        "ReceiveMessage",
        {"WaitTimeSeconds": 21},
        (
            _INVALID,
            400,
            "Value 21 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20,"
            " if provided.",
        ),
    ),
    (
        "a delay of 901 s",
        "SendMessage",
        {"MessageBody": "x", "DelaySeconds": 901},
        (
            _INVALID,
            400,
            "Value 901 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0"
            " and <= 900.",
        ),
    ),
    (
        "a message over 1 MiB",
        "SendMessage",
        {"MessageBody": BIG},
        (
            _INVALID,
            400,
            "One or more parameters are invalid. Reason: Message must be shorter than 1048576"
            " bytes.",
        ),
    ),
    (
        "a body with a control character",
        "SendMessage",
        {"MessageBody": "a\x01b"},
        (
            "InvalidMessageContents",
            400,
            "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to"
            " #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF",
        ),
    ),
    (
        "eleven entries",
        "SendMessageBatch",
        {"Entries": [{"Id": f"e{n}", "MessageBody": "x"} for n in range(11)]},
        (
            "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
            400,
            "Maximum number of entries per request are 10. You have sent 11.",
        ),
    ),
    (
        "no entries",
        "DeleteMessageBatch",
        {"Entries": []},
        (
            "AWS.SimpleQueueService.EmptyBatchRequest",
            400,
            "There should be at least one DeleteMessageBatchRequestEntry in the request.",
        ),
    ),
    (
        "one entry id twice",
        "SendMessageBatch",
        {"Entries": [{"Id": "a", "MessageBody": "x"}, {"Id": "a", "MessageBody": "y"}]},
        ("AWS.SimpleQueueService.BatchEntryIdsNotDistinct", 400, "Id a repeated."),
    ),
    (
        "an entry id with a space",
        "ChangeMessageVisibilityBatch",
        {"Entries": [{"Id": "a b", "ReceiptHandle": "h", "VisibilityTimeout": 1}]},
        (
            "AWS.SimpleQueueService.InvalidBatchEntryId",
            400,
            "A batch entry id can only contain alphanumeric characters, hyphens and"
            " underscores. It can be at most 80 letters long.",
        ),
    ),
    (
        "a batch over 1 MiB",
        "SendMessageBatch",
        {"Entries": [{"Id": f"e{n}", "MessageBody": "x" * 300_000} for n in range(4)]},
        (
            "AWS.SimpleQueueService.BatchRequestTooLong",
            400,
            "Batch requests cannot be longer than 1048576 bytes. You have sent 1200000 bytes.",
        ),
    ),
    (
        "51 tags",
        "TagQueue",
        {"Tags": {f"k{n}": "v" for n in range(51)}},
        (_INVALID, 400, "Too many tags added for queue conf."),
    ),
    (
        "a visibility timeout over 12 hours",
        "ChangeMessageVisibility",
        {"ReceiptHandle": "HANDLE", "VisibilityTimeout": 43_201},
        (
            _INVALID,
            400,
            "Value 43201 for parameter VisibilityTimeout is invalid. Reason: Must be between 0"
            " and 43200, if provided.",
        ),
    ),
    (
        "a queue attribute out of range",
        "SetQueueAttributes",
        {"Attributes": {"VisibilityTimeout": "43201"}},
        ("InvalidAttributeValue", 400, "Invalid value for the parameter VisibilityTimeout."),
    ),
    (
        "an unknown queue attribute",
        "SetQueueAttributes",
        {"Attributes": {"Colour": "blue"}},
        ("InvalidAttributeName", 400, "Unknown Attribute Colour."),
    ),
    (
        "a receipt handle that is none",
        "DeleteMessage",
        {"ReceiptHandle": "garbage"},
        (
            "ReceiptHandleIsInvalid",
            404,
            'The input receipt handle "garbage" is not a valid receipt handle.',
        ),
    ),
    (
        "a redrive policy with maxReceiveCount 0",
        "SetQueueAttributes",
        {
            "Attributes": {
                "RedrivePolicy": '{"deadLetterTargetArn":"' + arn("conf-dlq") + '",'
                '"maxReceiveCount":0}'
            }
        },
        (
            _INVALID,
            400,
            'Value {"deadLetterTargetArn":"' + arn("conf-dlq") + '","maxReceiveCount":0} for'
            " parameter RedrivePolicy is invalid. Reason: Invalid value for maxReceiveCount: 0,"
            " valid values are from 1 to 1000 both inclusive.",
        ),
    ),
    (
        "a permission label twice",
        "AddPermission",
        {"Label": "conf", "AWSAccountIds": [ACCOUNT], "Actions": ["SendMessage"]},
        (_INVALID, 400, "Value conf for parameter Label is invalid. Reason: Already exists."),
    ),
    (
        "eight actions",
        "AddPermission",
        {"Label": "many", "AWSAccountIds": [ACCOUNT], "Actions": ["SendMessage"] * 8},
        ("OverLimit", 403, "8 Actions were found, maximum allowed is 7."),
    ),
    (
        "an owner's action",
        "AddPermission",
        {"Label": "own", "AWSAccountIds": [ACCOUNT], "Actions": ["DeleteQueue"]},
        (
            _INVALID,
            400,
            "Value SQS:DeleteQueue for parameter ActionName is invalid. Reason: Only the queue"
            " owner is allowed to invoke this action.",
        ),
    ),
    (
        "an unknown label",
        "RemovePermission",
        {"Label": "nobody"},
        (
            _INVALID,
            400,
            "Value nobody for parameter Label is invalid. Reason: can't find label on existing"
            " policy.",
        ),
    ),
]


@pytest.mark.parametrize(
    ("operation", "params", "expected"),
    [pytest.param(op, p, e, id=label) for label, op, p, e in LIMITS],
)
def test_a_limit_is_refused_as_aws_refuses_it(
    loose: Any, world: World, operation: str, params: dict[str, Any], expected: tuple[str, int, str]
) -> None:
    if operation == "AddPermission" and params["Label"] == "conf":
        loose.add_permission(
            QueueUrl=world.url, Label="conf", AWSAccountIds=[ACCOUNT], Actions=["SendMessage"]
        )
    if params.get("ReceiptHandle") == "HANDLE":
        params = {**params, "ReceiptHandle": world.handle}
    code, status, message = expected
    got = _refused(loose, operation, {"QueueUrl": world.url, **params})
    assert got == {"code": code, "status": status, "type": "Sender", "message": message}


def test_the_limits_themselves_are_accepted(loose: Any, world: World) -> None:
    loose.send_message(QueueUrl=world.url, MessageBody="x" * 1_048_576)
    loose.send_message(QueueUrl=world.url, MessageBody="x", DelaySeconds=900)
    loose.tag_queue(QueueUrl=world.url, Tags={f"k{n}": "v" for n in range(50)})
    entries = [{"Id": f"e{n}", "MessageBody": "x"} for n in range(10)]
    assert len(loose.send_message_batch(QueueUrl=world.url, Entries=entries)["Successful"]) == 10
    loose.receive_message(QueueUrl=world.url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
    loose.change_message_visibility(
        QueueUrl=world.url, ReceiptHandle=world.handle, VisibilityTimeout=43_200
    )


def test_a_missing_queue_is_worded_per_protocol(loose: Any, protocol: str) -> None:
    got = _refused(loose, "GetQueueUrl", {"QueueName": "absent"})
    wording = {
        "json": "The specified queue does not exist.",
        "query": "The specified queue does not exist for this wsdl version.",
    }
    assert got == {
        "code": "AWS.SimpleQueueService.NonExistentQueue",
        "status": 400,
        "type": "Sender",
        "message": wording[protocol],
    }
    with pytest.raises(loose.exceptions.QueueDoesNotExist):
        loose.get_queue_url(QueueName="absent")


# 4. Batch entries fail alone, as AWS reports them ------------------------------------------


def test_a_bad_batch_entry_fails_alone(loose: Any, world: World) -> None:
    sent = loose.send_message_batch(
        QueueUrl=world.url,
        Entries=[
            {"Id": "good", "MessageBody": "x"},
            {"Id": "late", "MessageBody": "x", "DelaySeconds": 901},
        ],
    )
    assert [e["Id"] for e in sent["Successful"]] == ["good"]
    assert sent["Failed"] == [
        {
            "Id": "late",
            "SenderFault": True,
            "Code": _INVALID,
            "Message": "Value 901 for parameter DelaySeconds is invalid. Reason: DelaySeconds"
            " must be >= 0 and <= 900.",
        }
    ]
    deleted = loose.delete_message_batch(
        QueueUrl=world.url,
        Entries=[{"Id": "ok", "ReceiptHandle": world.handle}, {"Id": "bad", "ReceiptHandle": "x"}],
    )
    assert [e["Id"] for e in deleted["Successful"]] == ["ok"]
    assert deleted["Failed"] == [
        {
            "Id": "bad",
            "SenderFault": True,
            "Code": "ReceiptHandleIsInvalid",
            "Message": 'The input receipt handle "x" is not a valid receipt handle.',
        }
    ]


def test_a_policy_is_stored_returned_and_removed_by_an_empty_value(
    loose: Any, world: World
) -> None:
    loose.add_permission(
        QueueUrl=world.url, Label="team", AWSAccountIds=["111122223333"], Actions=["SendMessage"]
    )
    policy = json.loads(
        loose.get_queue_attributes(QueueUrl=world.url, AttributeNames=["Policy"])["Attributes"][
            "Policy"
        ]
    )
    assert policy["Statement"] == [
        {
            "Sid": "team",
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
            "Action": "SQS:SendMessage",
            "Resource": arn("conf"),
        }
    ]
    loose.set_queue_attributes(QueueUrl=world.url, Attributes={"Policy": ""})
    shown = loose.get_queue_attributes(QueueUrl=world.url, AttributeNames=["Policy"])
    assert "Policy" not in shown.get("Attributes", {})
    loose.add_permission(
        QueueUrl=world.url, Label="again", AWSAccountIds=[ACCOUNT], Actions=["ReceiveMessage"]
    )
    loose.remove_permission(QueueUrl=world.url, Label="again")
    shown = loose.get_queue_attributes(QueueUrl=world.url, AttributeNames=["All"])
    assert "Policy" not in shown["Attributes"]
