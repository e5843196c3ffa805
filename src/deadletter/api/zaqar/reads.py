"""What a Zaqar route reads from a request: its query parameters and its body's fields.

Each row of the route table (`routes.ROUTES`) carries its route's `Reads`: before a handler
runs, `context.endpoint` refuses a query parameter its route does not read, a body field it
does not read, and fields in the body of a route that takes none; nothing has been looked up
or written yet. The OpenAPI document lists each route's query parameters and body fields from
its row. Nested objects (a message, a filter, a patch operation) are checked by the code that
reads them, with the same rule (`parse.known_fields`); a queue's metadata keeps its free user
keys and refuses unknown reserved (`_`) ones (`metadata.to_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deadletter.api import strict_json
from deadletter.api.zaqar.errors import bad_request
from deadletter.domain.filters import FILTER_KEYS


@dataclass(frozen=True)
class Reads:
    """A route's query parameters, and its body: None for a route that takes none, `FREE`
    for one whose top level its handler checks itself (a metadata document, a patch list),
    else the fields of its JSON object."""

    query: tuple[str, ...] = ()
    body: frozenset[str] | None = None


# A body whose top level its handler checks (queue metadata, JSON patch).
FREE: frozenset[str] = frozenset({"*"})

# What a request read outside the route table reads: its handler checks it all.
ANYTHING = Reads(body=FREE)

PAGE = ("marker", "limit")
# The fields of a posted message, of a dead-letter request, of a redrive.
MESSAGE_FIELDS = frozenset(
    {"body", "ttl", "delay", "attributes", "dead_letter_eligible", "group_id", "deduplication_id"}
)
DEAD_LETTER_FIELDS = frozenset({"description", "reason", "error"})
REDRIVE_FIELDS = frozenset(
    {
        "destination",
        "message_ids",
        "pattern_id",
        "rate",
        "source_queue",
        "source_tag",
        "reason",
        "since",
        "until",
        "canary",
        "watch",
        "max_redeath",
        "seed",
        "force",
        "dry_run",
        "transform",
        *FILTER_KEYS,
    }
)
SUBSCRIPTION_FIELDS = frozenset({"subscriber", "ttl", "options"})


def check_reads(reads: Reads, method: str, params: Mapping[str, str], body: bytes) -> None:
    """Refuse a query parameter the route does not read, and fields in the body of a route
    that takes none (an empty object passes), before the handler runs. A GET's body means
    nothing in HTTP and is left alone: python-zaqarclient reuses a request, body and all, to
    read back what it just created."""
    if params:
        refused = strict_json.unknown_name(params, reads.query, "query parameter")
        if refused is not None:
            raise bad_request(refused)
    if reads.body is None and method != "GET" and body.strip():
        try:
            doc = strict_json.loads(body)
        except strict_json.InvalidJson:
            doc = None
        if not isinstance(doc, dict):
            raise bad_request("This request takes no body.")
        refused = strict_json.unknown_name(doc, (), "field")
        if refused is not None:
            raise bad_request(f"{refused} This request takes no body.")


def check_fields(reads: Reads, doc: Any) -> None:
    """Refuse a field of the body object `doc` that the route does not read."""
    if isinstance(doc, dict) and reads.body is not None and reads.body is not FREE:
        refused = strict_json.unknown_name(doc, reads.body, "field")
        if refused is not None:
            raise bad_request(refused)
