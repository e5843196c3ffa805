"""One SQS request as an action sees it (`Call`): typed parameters, the queue it names, batch
entries and page tokens."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deadletter.api.notify import Notifier
from deadletter.api.sqs import attributes as attrs
from deadletter.api.sqs.errors import (
    SqsError,
    batch_error,
    invalid_parameter,
    invalid_value,
    missing_parameter,
    queue_does_not_exist,
)
from deadletter.domain import names
from deadletter.engine import Engine

MAX_BATCH = 10
MAX_LIST = 1000
# A batch entry's id: 1-80 of `[A-Za-z0-9_-]`.
_ENTRY_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")


@dataclass
class Call:
    """One SQS request as an action sees it."""

    engine: Engine
    notifier: Notifier
    params: dict[str, Any]
    # The project the queues belong to, and the 12-digit account id its queue URLs and ARNs
    # show. Without credentials they are one string; with them, the credential maps one to
    # the other, so a project's queues are the same through both faces.
    project: str
    account: str
    region: str
    # The request's own base URL, for the queue URLs an answer shows (built only then).
    request_base: Callable[[], str]
    path_queue: str | None = None  # the query protocol may POST to the queue's URL
    # The server's home region: its queue URLs have no region part, another region's have.
    home_region: str = ""
    # Every text in `params`, message bodies too, is known to hold only characters SQS
    # accepts (`wire.clean_json`): a send need not look at its bodies again.
    clean: bool = False

    def text(self, name: str, required: bool = True) -> str | None:
        value = self.params.get(name)
        if value is None or value == "":
            if required:
                raise missing_parameter(name)
            return None
        if not isinstance(value, str):
            raise invalid_value(value, name, "Must be a string.")
        return value

    def integer(
        self,
        name: str,
        low: int | None = None,
        high: int | None = None,
        default: int | None = None,
        reason: str = "",
    ) -> int | None:
        """An integer parameter in [low, high] (any integer without them, where the engine
        checks the range); AWS words most ranges as `reason` says, by default `Must be
        between LOW and HIGH, if provided.`"""
        raw = self.params.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(str(raw))
        except ValueError:
            raise invalid_value(raw, name, "Must be an integer.") from None
        if low is not None and high is not None and not low <= value <= high:
            raise invalid_value(
                value, name, reason or f"Must be between {low} and {high}, if provided."
            )
        return value

    def names(self, name: str) -> list[str]:
        value = self.params.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise invalid_value(value, name, "Must be a list of strings.")
        return value

    def attribute_names(self, name: str) -> list[str]:
        """A list of attribute names (queue, system or message attributes), bare."""
        return [attrs.bare_name(v) for v in self.names(name)]

    def queue(self) -> str:
        """The queue's name from QueueUrl (a URL or a bare name) or the request path."""
        url = self.text("QueueUrl", required=self.path_queue is None)
        if url is None:
            assert self.path_queue is not None
            return self.path_queue
        parts = [p for p in url.split("://", 1)[-1].split("/")[1:] if p] if "://" in url else []
        if "://" not in url:
            parts = [p for p in url.split("/") if p]
        if not parts:
            raise queue_does_not_exist(url)
        if len(parts) >= 2 and parts[-2] != self.account:
            raise queue_does_not_exist(url)
        return parts[-1]

    @property
    def base_url(self) -> str:
        return self.request_base()

    def url(self, name: str) -> str:
        if self.home_region and self.region != self.home_region:
            return f"{self.base_url}/{self.region}/{self.account}/{name}"
        return f"{self.base_url}/{self.account}/{name}"

    def arn(self, name: str) -> str:
        return attrs.arn(self.region, self.account, name)


Action = Callable[[Call], dict[str, Any]]


def batch_entries(call: Call, action: str) -> list[dict[str, Any]]:
    """A batch's entries, refused as a whole as AWS does: none, more than ten, an id that is
    not 1-80 of `[A-Za-z0-9_-]`, an id repeated."""
    entries = call.params.get("Entries")
    if not entries:
        raise batch_error(
            "EmptyBatchRequest",
            f"There should be at least one {action}RequestEntry in the request.",
        )
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise invalid_value("Entries", "Entries", "Must be a list of structures.")
    if len(entries) > MAX_BATCH:
        raise batch_error(
            "TooManyEntriesInBatchRequest",
            f"Maximum number of entries per request are {MAX_BATCH}. You have sent {len(entries)}.",
        )
    seen: set[str] = set()
    for index, entry in enumerate(entries, 1):
        entry_id = entry.get("Id")
        if entry_id is None or entry_id == "":
            raise missing_parameter(f"{action}RequestEntry.{index}.Id")
        if not isinstance(entry_id, str) or _ENTRY_ID.fullmatch(entry_id) is None:
            raise batch_error(
                "InvalidBatchEntryId",
                "A batch entry id can only contain alphanumeric characters, hyphens and"
                " underscores. It can be at most 80 letters long.",
            )
        if entry_id in seen:
            raise batch_error("BatchEntryIdsNotDistinct", f"Id {entry_id} repeated.")
        seen.add(entry_id)
    return entries


def entry_failure(entry_id: str, error: SqsError) -> dict[str, Any]:
    return {
        "Id": entry_id,
        "SenderFault": error.sender_fault,
        "Code": error.code,
        "Message": error.message,
    }


def encode_token(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode()


def decode_token(token: str) -> str:
    """The queue name a page token continues after; tokens only ever name queues."""
    try:
        name = base64.urlsafe_b64decode(token.encode()).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise invalid_parameter("Invalid NextToken value.") from None
    if not names.ANY_QUEUE.valid(name):
        raise invalid_parameter("Invalid NextToken value.")
    return name
