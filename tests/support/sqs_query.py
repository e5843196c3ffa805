"""botocore's SQS model in the query protocol, as SDKs spoke it before SQS took JSON: the
JSON model keeps the shapes; the query protocol's names are put back (`Attribute.1.Name`,
`MessageAttributeName.1`, `<Message>`, `<...Result>`) and so are the error codes AWS gives
in that protocol, so that `client.exceptions.QueueDoesNotExist` and the like are raised
from XML answers too."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import botocore

SQS_NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/"
_Q = "AWS.SimpleQueueService."
# AWS's query error codes of SQS's modelled exceptions (its awsQueryError traits), with the
# HTTP status and fault it documents; written here from AWS's model, not from the server.
QUERY_ERRORS: dict[str, tuple[str, int]] = {
    "BatchEntryIdsNotDistinct": (_Q + "BatchEntryIdsNotDistinct", 400),
    "BatchRequestTooLong": (_Q + "BatchRequestTooLong", 400),
    "EmptyBatchRequest": (_Q + "EmptyBatchRequest", 400),
    "InvalidAttributeName": ("InvalidAttributeName", 400),
    "InvalidAttributeValue": ("InvalidAttributeValue", 400),
    "InvalidBatchEntryId": (_Q + "InvalidBatchEntryId", 400),
    "InvalidIdFormat": ("InvalidIdFormat", 400),
    "InvalidMessageContents": ("InvalidMessageContents", 400),
    "MessageNotInflight": (_Q + "MessageNotInflight", 400),
    "OverLimit": ("OverLimit", 403),
    "PurgeQueueInProgress": (_Q + "PurgeQueueInProgress", 403),
    "QueueDeletedRecently": (_Q + "QueueDeletedRecently", 400),
    "QueueDoesNotExist": (_Q + "NonExistentQueue", 400),
    "QueueNameExists": ("QueueAlreadyExists", 400),
    "ReceiptHandleIsInvalid": ("ReceiptHandleIsInvalid", 404),
    "ResourceNotFoundException": ("ResourceNotFoundException", 404),
    "TooManyEntriesInBatchRequest": (_Q + "TooManyEntriesInBatchRequest", 400),
    "UnsupportedOperation": (_Q + "UnsupportedOperation", 400),
}


def json_model() -> dict:  # type: ignore[type-arg]
    source = Path(os.path.dirname(botocore.__file__), "data/sqs/2012-11-05/service-2.json.gz")
    model: dict = json.loads(gzip.decompress(source.read_bytes()))  # type: ignore[type-arg]
    return model


def query_models(root: Path) -> Path:
    """A folder of botocore data holding the query-protocol SQS model."""
    model = json_model()
    model["metadata"].update(protocol="query", protocols=["query"], xmlNamespace=SQS_NAMESPACE)
    for name, operation in model["operations"].items():
        if "output" in operation:
            operation["output"]["resultWrapper"] = f"{name}Result"
    shapes = model["shapes"]
    for name, shape in shapes.items():
        if name in QUERY_ERRORS:
            code, status = QUERY_ERRORS[name]
            shape["error"] = {"code": code, "httpStatusCode": status, "senderFault": True}
        if shape.get("flattened") and shape["type"] == "list":
            singular = {"MessageSystemAttributeList": "MessageSystemAttributeName"}
            shape["member"]["locationName"] = singular.get(name, name.removesuffix("List"))
        elif shape.get("flattened") and shape["type"] == "map":
            key = "Key" if name == "TagMap" else "Name"
            shape["key"]["locationName"], shape["value"]["locationName"] = key, "Value"
        for member_name, member in shape.get("members", {}).items():
            target = shapes[member["shape"]]
            if target.get("flattened") and target["type"] == "map":
                member["locationName"] = member_name[0].upper() + member_name[1:-1]
    folder = root / "sqs" / "2012-11-05"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "service-2.json").write_text(json.dumps(model))
    return root


def send_as_get(client: Any) -> list[str]:
    """Make a query-protocol client send each request as a GET, its fields in the query string
    (AWS takes both); returns the methods of the requests it then sends, as a record. The
    change is made before signing, so SigV4 signs the GET."""
    sent: list[str] = []

    def to_get(request: Any, **_: Any) -> None:
        fields = request.data
        assert isinstance(fields, dict), "only the query protocol's form fields move to a GET"
        request.method = "GET"
        request.params.update(fields)
        request.data = b""
        if "Content-Type" in request.headers:
            del request.headers["Content-Type"]

    def record(request: Any, **_: Any) -> None:
        sent.append(request.method)

    client.meta.events.register_first("before-sign.sqs", to_get)
    client.meta.events.register("before-send.sqs", record)
    return sent
