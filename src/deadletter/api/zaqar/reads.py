"""What each Zaqar route reads from a request: its query parameters and its body's fields.

One table, by handler: before a handler runs, `context.endpoint` refuses a query parameter
its route does not read, a body field it does not read, and fields in the body of a route
that takes none; nothing has been looked up or written yet. The OpenAPI document lists each
route's query parameters and body fields from here (`openapi.py`). Nested objects (a
message, a filter, a patch operation) are checked by the code that reads them, with the same
rule (`parse.known_fields`); a queue's metadata keeps its free user keys and refuses unknown
reserved (`_`) ones (`metadata.to_settings`).
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

READS: dict[str, Reads] = {
    "versions": Reads(),
    "home": Reads(),
    "ping": Reads(),
    "health": Reads(),
    "list_queues": Reads((*PAGE, "detailed", "with_count")),
    "create_queue": Reads(body=FREE),
    "get_queue": Reads(("defaults",)),
    "patch_queue": Reads(body=FREE),
    "delete_queue": Reads(("force",)),
    "queue_stats": Reads(),
    "purge_queue": Reads(("force",), frozenset({"resource_types"})),
    "post_messages": Reads(body=frozenset({"messages"})),
    "list_messages": Reads((*PAGE, "echo", "include_claimed", "include_delayed", "ids")),
    # Zaqar's `claim_ids` names the claims of the messages `ids` lists; they are deleted
    # whatever their claims, so it changes nothing here.
    "delete_messages": Reads(("ids", "pop", "claim_ids")),
    "get_message": Reads(),
    "delete_message": Reads(("claim_id", "tag")),
    "dead_letter_message": Reads(("claim_id", "tag"), DEAD_LETTER_FIELDS),
    "release_message": Reads(("claim_id", "tag"), frozenset({"delay", "requeue"})),
    "create_claim": Reads(("limit", "tag"), frozenset({"ttl", "grace", "acknowledge"})),
    "get_claim": Reads(("tag",)),
    "renew_claim": Reads(("tag",), frozenset({"ttl", "grace"})),
    "release_claim": Reads(("tag",)),
    "dead_letter_batch": Reads(("tag",), DEAD_LETTER_FIELDS | {"messages"}),
    # The dead-letter filter language (domain/filters.py), the same on every route that selects.
    "list_dead_letters": Reads((*FILTER_KEYS, *PAGE)),
    "count_dead_letters": Reads(FILTER_KEYS),
    "purge_dead_letters": Reads(FILTER_KEYS),
    "edit_dead_letter": Reads(("redrive",), FREE),
    "dead_letter_sources": Reads(),
    "start_redrive": Reads(body=REDRIVE_FIELDS),
    "list_redrives": Reads(),
    "get_redrive": Reads(),
    "cancel_redrive": Reads(),
    "resume_redrive": Reads(),
    "put_patterns": Reads(body=frozenset({"patterns"})),
    "get_patterns": Reads(),
    "merge_assignments": Reads(body=frozenset({"writer", "batch", "assignments"})),
    "list_templates": Reads(PAGE),
    # A template's fields are its settings' (templates.SETTINGS_KEYS), checked there.
    "put_template": Reads(body=FREE),
    "get_template": Reads(),
    "patch_template": Reads(body=FREE),
    "delete_template": Reads(),
    "create_subscription": Reads(body=SUBSCRIPTION_FIELDS),
    # python-zaqarclient sends `detailed`, which changes nothing here (each is whole).
    "list_subscriptions": Reads((*PAGE, "detailed")),
    "get_subscription": Reads(),
    "update_subscription": Reads(body=SUBSCRIPTION_FIELDS),
    "delete_subscription": Reads(),
    "confirm_subscription": Reads(body=frozenset({"confirmed"})),
    "list_tags": Reads(),
    "create_tag": Reads(body=frozenset({"start", "filter"})),
    "get_tag": Reads(),
    "delete_tag": Reads(),
}


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
