"""The Zaqar face's route table: one row per route, and everything built from it.

A row says all there is to know of a route: its method and path, its handler, the action a
credential must allow (`auth.roles`), whether it is a message route answered ahead of the
router (`api.hot`), and how the OpenAPI document shows it (summary, statuses, request body
schema). The router (`zaqar_routes`), the action each request needs (`ZaqarRoute.action_for`,
which its endpoint asks), the hot path and the OpenAPI document (`api.openapi`) are all read
from `ROUTES`, and so is what each route reads from a request (its query parameters and body
fields, `reads.Reads`), refused before its handler runs if anything else comes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field

from starlette.convertors import StringConvertor, register_url_convertor
from starlette.routing import BaseRoute, Route, compile_path

from deadletter.api.hot import HotRoute
from deadletter.api.options import AppOptions
from deadletter.api.zaqar import auto_redrive as auto
from deadletter.api.zaqar.claims import create_claim, get_claim, release_claim, renew_claim
from deadletter.api.zaqar.context import Handler, endpoint
from deadletter.api.zaqar.dead_letters import (
    cancel_redrive,
    dead_letter_batch,
    dead_letter_message,
    dead_letter_sources,
    edit_dead_letter,
    get_patterns,
    get_redrive,
    list_redrives,
    merge_assignments,
    purge_dead_letters,
    put_patterns,
    release_message,
    resume_redrive,
    split_pattern,
    start_redrive,
)
from deadletter.api.zaqar.failure_groups import (
    ARCHIVE_FIELDS,
    DISCARD_FIELDS,
    RESTORE_FIELDS,
    SAVED_FILTER_FIELDS,
    archive_dead_letters,
    count_dead_letters,
    delete_saved_filter,
    discard_dead_letters,
    get_saved_filter,
    list_dead_letters,
    list_discards,
    list_saved_filters,
    put_saved_filter,
    restore_dead_letters,
)
from deadletter.api.zaqar.home import health, home, ping, versions
from deadletter.api.zaqar.messages import (
    delete_message,
    delete_messages,
    get_message,
    list_messages,
    post_messages,
)
from deadletter.api.zaqar.queues import (
    create_queue,
    delete_queue,
    get_queue,
    list_queues,
    patch_queue,
    purge_queue,
    queue_stats,
)
from deadletter.api.zaqar.reads import (
    DEAD_LETTER_FIELDS,
    FREE,
    PAGE,
    REDRIVE_FIELDS,
    SUBSCRIPTION_FIELDS,
    Reads,
)
from deadletter.api.zaqar.subscriptions import (
    confirm_subscription,
    create_subscription,
    delete_subscription,
    get_subscription,
    list_subscriptions,
    update_subscription,
)
from deadletter.api.zaqar.tags import (
    CREATE_FIELDS,
    POLICY_FIELDS,
    create_tag,
    delete_tag,
    get_tag,
    list_tags,
    update_tag,
)
from deadletter.api.zaqar.templates import (
    delete_template,
    get_template,
    list_templates,
    patch_template,
    put_template,
)
from deadletter.auth.roles import Action
from deadletter.domain.filters import FILTER_KEYS
from deadletter.engine import Engine

# A route that reads no query parameter and takes no body.
NOTHING = Reads()
CLAIM_REQUIRED = {"403": "Claim required"}
DLQ_REFUSES = {
    "409": "No active dead-letter policy, or the DLQ is full (its bound refuses them)",
}


@dataclass(frozen=True)
class ZaqarRoute:
    """One route of the Zaqar face."""

    method: str
    path: str
    handler: Handler
    _: KW_ONLY
    # The action a credential must allow; None for a public route (no credential at all).
    action: Action | None
    summary: str
    status: str = "200"  # the usual success
    also: tuple[str, ...] = ()  # further successes
    errors: Mapping[str, str] = field(default_factory=dict)  # beyond `openapi.ERRORS`
    body: str | None = None  # the request body's schema, by its name in the document
    media_type: str = "application/json"  # of the answer's body
    empty: bool = False  # the usual success has no body (a 201 with a Location only)
    # A query parameter that, given, makes the request another action (a pop is a claim).
    when: Mapping[str, Action] = field(default_factory=dict)
    client_id: bool = True  # the Client-ID header is required
    hot: bool = False  # a message route: answered ahead of the router (`api.hot`)
    # Its query parameters and body fields: anything else is refused before the handler runs.
    reads: Reads = NOTHING

    @property
    def name(self) -> str:
        """The route's name: its handler's, the OpenAPI operationId."""
        return self.handler.__name__

    def action_for(self, params: Mapping[str, str]) -> Action | None:
        """The action this request needs, given its query parameters."""
        for name, action in self.when.items():
            if params.get(name):
                return action
        return self.action


Q = "/v2/queues/{queue}"
M = Q + "/messages/{message_id}"
T = "/v2/templates/{template}"
S = Q + "/subscriptions/{subscription_id}"
AUTO = Q + "/dead_letters/auto_redrive"
R = ZaqarRoute
A = Action
ROUTES: list[ZaqarRoute] = [
    # Public, as in Zaqar; health tells the store's state, so it is the operator's.
    R("GET", "/", versions, action=None, summary="API versions (300 Multiple Choices)",
      status="300", client_id=False),
    R("GET", "/v2", home, action=None, summary="JSON home document",
      media_type="application/json-home", client_id=False),
    R("GET", "/v2/", home, action=None, summary="JSON home document",
      media_type="application/json-home", client_id=False),
    R("GET", "/v2/ping", ping, action=None, summary="Liveness check", status="204",
      client_id=False),
    R("GET", "/v2/health", health, action=A.SERVER_HEALTH, summary="Storage health",
      client_id=False),
    # Queues
    R("GET", "/v2/queues", list_queues, action=A.QUEUE_LIST, summary="List queues",
      reads=Reads((*PAGE, "detailed", "with_count"))),
    R("PUT", Q, create_queue, action=A.QUEUE_CREATE,
      summary="Create a queue with metadata (201; 204 when it exists)", status="201",
      also=("204",), errors={"409": "Conflict"}, body="Metadata", empty=True,
      reads=Reads(body=FREE)),
    R("GET", Q, get_queue, action=A.QUEUE_GET,
      summary="Queue metadata: user keys and the reserved keys that are set (with"
      " defaults=true, every reserved key, its default where unset)",
      reads=Reads(("defaults",))),
    R("PATCH", Q, patch_queue, action=A.QUEUE_UPDATE,
      summary="Update metadata (application/openstack-messaging-v2.0-json-patch)",
      errors={"409": "Conflict", "415": "Wrong Content-Type for a patch"}, body="Patch",
      reads=Reads(body=FREE)),
    R("DELETE", Q, delete_queue, action=A.QUEUE_DELETE,
      summary="Delete a queue and its messages", status="204",
      reads=Reads(("force",))),
    R("GET", Q + "/stats", queue_stats, action=A.QUEUE_STATS,
      summary="Message counts and dead-letter counters"),
    R("POST", Q + "/purge", purge_queue, action=A.QUEUE_PURGE,
      summary="Delete every message of the queue", status="204", body="Purge",
      reads=Reads(("force",), frozenset({"resource_types"}))),
    # Messages
    R("POST", Q + "/messages", post_messages, action=A.MESSAGE_SEND,
      summary="Send messages (the queue is created if missing)", status="201",
      errors={"403": "Message is claimed",
              "409": "Queue is full: its bound refuses the send (_overflow"
              " reject-publish[-dlx]), or its DLQ refuses the oldest messages drop-head"
              " would push out"},
      body="NewMessages", hot=True,
      reads=Reads(body=frozenset({"messages"}))),
    R("GET", Q + "/messages", list_messages, action=A.MESSAGE_BROWSE,
      summary="List messages, or get some by ids", when={"ids": A.MESSAGE_PEEK},
      reads=Reads((*PAGE, "echo", "include_claimed", "include_delayed", "ids"))),
    # ?ids= deletes messages (an ack); ?pop=N claims and deletes, so it is a claim (every
    # role that may claim may also ack).
    # Zaqar's `claim_ids` names the claims of the messages `ids` lists; they are deleted
    # whatever their claims, so it changes nothing here.
    R("DELETE", Q + "/messages", delete_messages, action=A.MESSAGE_ACK,
      summary="Delete messages by ids, or pop some", status="204", also=("200",),
      errors={"403": "Message is claimed"}, when={"pop": A.MESSAGE_CLAIM}, hot=True,
      reads=Reads(("ids", "pop", "claim_ids"))),
    R("GET", M, get_message, action=A.MESSAGE_PEEK, summary="One message"),
    R("DELETE", M, delete_message, action=A.MESSAGE_ACK, summary="Acknowledge one message",
      status="204", errors=CLAIM_REQUIRED, hot=True,
      reads=Reads(("claim_id", "tag"))),
    R("POST", M + "/dead_letter", dead_letter_message, action=A.MESSAGE_DEAD_LETTER,
      summary="Move one claimed message to the DLQ now (reason rejected)",
      errors={**CLAIM_REQUIRED, **DLQ_REFUSES}, body="DeadLetter",
      reads=Reads(("claim_id", "tag"), DEAD_LETTER_FIELDS)),
    R("POST", M + "/release", release_message, action=A.MESSAGE_RELEASE,
      summary="Give one claimed message back (nack)", status="204",
      errors={**CLAIM_REQUIRED, "409": "Conflict"}, body="Release",
      reads=Reads(("claim_id", "tag"), frozenset({"delay", "requeue"}))),
    # Claims
    R("POST", Q + "/claims", create_claim, action=A.MESSAGE_CLAIM,
      summary="Claim messages (204 when none); with acknowledge, first acknowledge the last"
      " batch", status="201", also=("204", "200"), body="ClaimRequest", hot=True,
      reads=Reads(("limit", "tag"), frozenset({"ttl", "grace", "acknowledge"}))),
    R("GET", Q + "/claims/{claim_id}", get_claim, action=A.MESSAGE_CLAIM,
      summary="A claim and its messages",
      reads=Reads(("tag",))),
    R("PATCH", Q + "/claims/{claim_id}", renew_claim, action=A.MESSAGE_VISIBILITY,
      summary="Renew a claim", status="204", errors={"409": "Conflict"}, body="ClaimTimes",
      reads=Reads(("tag",), frozenset({"ttl", "grace"}))),
    R("DELETE", Q + "/claims/{claim_id}", release_claim, action=A.MESSAGE_RELEASE,
      summary="Release a claim", status="204",
      reads=Reads(("tag",))),
    # Dead letters
    R("POST", Q + "/dead_letter", dead_letter_batch, action=A.MESSAGE_DEAD_LETTER,
      summary="Move several claimed messages to the DLQ",
      errors={**CLAIM_REQUIRED, **DLQ_REFUSES}, body="DeadLetterBatch",
      reads=Reads(("tag",), DEAD_LETTER_FIELDS | {"messages"})),
    # The dead-letter filter language (domain/filters.py), the same on every route that selects.
    R("GET", Q + "/dead_letters", list_dead_letters, action=A.DLQ_BROWSE,
      summary="Browse a DLQ without consuming it (with archived=true, its archive)",
      reads=Reads((*FILTER_KEYS, *PAGE, "archived"))),
    R("GET", Q + "/dead_letters/count", count_dead_letters, action=A.DLQ_BROWSE,
      summary="How many dead letters a filter selects now (with archived=true, archived)",
      reads=Reads((*FILTER_KEYS, "archived"))),
    # Deleting the dead letters a filter selects is a purge of part of the queue.
    R("DELETE", Q + "/dead_letters", purge_dead_letters, action=A.QUEUE_PURGE,
      summary="Delete the dead letters a filter selects",
      reads=Reads(FILTER_KEYS)),
    # Failure groups as units: a saved filter or a pattern archived, restored, discarded.
    R("GET", Q + "/dead_letters/filters", list_saved_filters, action=A.DLQ_BROWSE,
      summary="Filters saved on a DLQ, by name"),
    R("PUT", Q + "/dead_letters/filters/{name}", put_saved_filter, action=A.DLQ_FILTERS,
      summary="Save a filter on a DLQ by name (201; 200 when it replaces one)", status="201",
      also=("200",), body="SavedFilter", reads=Reads(body=SAVED_FILTER_FIELDS)),
    R("GET", Q + "/dead_letters/filters/{name}", get_saved_filter, action=A.DLQ_BROWSE,
      summary="One saved filter"),
    R("DELETE", Q + "/dead_letters/filters/{name}", delete_saved_filter, action=A.DLQ_FILTERS,
      summary="Delete a saved filter", status="204"),
    R("POST", Q + "/dead_letters/archive", archive_dead_letters, action=A.DLQ_ARCHIVE,
      summary="Archive the dead letters a selection holds, out of the DLQ's active view,"
      " for a retention", body="Archive", reads=Reads(body=ARCHIVE_FIELDS)),
    R("POST", Q + "/dead_letters/restore", restore_dead_letters, action=A.DLQ_ARCHIVE,
      summary="Bring archived dead letters a selection holds back into the DLQ",
      body="Restore", reads=Reads(body=RESTORE_FIELDS)),
    # Deleting dead letters is a purge of part of the queue, recorded.
    R("POST", Q + "/dead_letters/discard", discard_dead_letters, action=A.QUEUE_PURGE,
      summary="Delete the dead letters a selection holds, with a record of what and why",
      body="Discard", reads=Reads(body=DISCARD_FIELDS)),
    R("GET", Q + "/dead_letters/discards", list_discards, action=A.DLQ_BROWSE,
      summary="What left the DLQ for good, newest first: discards and ended archives",
      reads=Reads(PAGE)),
    R("PATCH", Q + "/dead_letters/{message_id}", edit_dead_letter, action=A.DLQ_EDIT,
      summary="Patch a dead letter's body or attributes (merge patch or JSON Patch)",
      errors={"409": "The JSON Patch does not apply, or the redrive asked for cannot start",
              "415": "Wrong Content-Type for an edit"},
      body="DeadLetterEdit",
      reads=Reads(("redrive",), FREE)),
    R("GET", Q + "/dead_letter_sources", dead_letter_sources, action=A.QUEUE_GET,
      summary="Queues whose dead-letter policy names this queue"),
    R("POST", Q + "/redrives", start_redrive, action=A.REDRIVE_START,
      summary="Start a redrive task", status="201",
      errors={"409": "A redrive task is already running"}, body="Redrive",
      reads=Reads(body=REDRIVE_FIELDS)),
    R("GET", Q + "/redrives", list_redrives, action=A.REDRIVE_LIST,
      summary="Redrive tasks of a DLQ, newest first"),
    R("GET", Q + "/redrives/{task_id}", get_redrive, action=A.REDRIVE_GET,
      summary="One redrive task"),
    R("DELETE", Q + "/redrives/{task_id}", cancel_redrive, action=A.REDRIVE_CANCEL,
      summary="Cancel a running or paused redrive task (202)", status="202",
      errors={"409": "The task is not running"}),
    # Resuming moves messages, as starting does.
    R("POST", Q + "/redrives/{task_id}/resume", resume_redrive, action=A.REDRIVE_START,
      summary="Resume a task its canary paused: move the rest (202)", status="202",
      errors={"409": "The task is not paused, or another runs on its DLQ"}),
    # A DLQ's automatic redrive policy: its rounds move messages, as a redrive does; stopping
    # or deleting it cancels its round in flight, as cancelling a task does.
    R("PUT", AUTO, auto.put_auto_redrive, action=A.REDRIVE_START,
      summary="Set the DLQ's automatic redrive policy (201 new, 200 replaced)", status="201",
      also=("200",), body="AutoRedrive",
      reads=Reads(body=auto.FIELDS)),
    R("GET", AUTO, auto.get_auto_redrive, action=A.REDRIVE_GET,
      summary="The DLQ's automatic redrive policy: its state, rounds and next round"),
    R("DELETE", AUTO, auto.delete_auto_redrive, action=A.REDRIVE_CANCEL,
      summary="Delete the automatic redrive policy, cancelling its round in flight (204 even"
      " when there was none)", status="204"),
    R("POST", AUTO + "/stop", auto.stop_auto_redrive, action=A.REDRIVE_CANCEL,
      summary="Stop the automatic redrive policy, cancelling its round in flight"),
    R("POST", AUTO + "/resume", auto.resume_auto_redrive, action=A.REDRIVE_START,
      summary="Resume a paused or stopped automatic redrive policy: a round at once",
      errors={"409": "The policy is active"}),
    R("PUT", Q + "/patterns", put_patterns, action=A.PATTERNS_PUT,
      summary="Store failure patterns found by the analysis", status="204", body="Patterns",
      reads=Reads(body=frozenset({"patterns"}))),
    R("GET", Q + "/patterns", get_patterns, action=A.PATTERNS_GET,
      summary="Stored failure patterns"),
    # Merging a batch changes the stored patterns, as storing them does.
    R("POST", Q + "/patterns/assignments", merge_assignments, action=A.PATTERNS_PUT,
      summary="Merge a writer's batch of pattern assignments, once per (writer, batch)",
      errors={"409": "Batch behind"}, body="Assignments",
      reads=Reads(body=frozenset({"writer", "batch", "assignments"}))),
    # Splitting a pattern by hand changes the stored patterns, as storing them does.
    R("POST", Q + "/patterns/{pattern_id}/split", split_pattern, action=A.PATTERNS_PUT,
      summary="Replace a pattern by one pattern per value its members hold at a position",
      errors={"409": "Nothing to split at that position"}, body="PatternSplit",
      reads=Reads(body=frozenset({"position", "dry_run"}))),
    # Queue templates set what new queues get: reading them is a lookup, changing them an
    # update.
    R("GET", "/v2/templates", list_templates, action=A.QUEUE_LIST,
      summary="Queue templates of the project, by name",
      reads=Reads(PAGE)),
    # A template's fields are its settings' (templates.SETTINGS_KEYS), checked there.
    R("PUT", T, put_template, action=A.QUEUE_UPDATE,
      summary="Create (201) or replace (200) a queue template", status="201",
      body="Template",
      reads=Reads(body=FREE)),
    R("GET", T, get_template, action=A.QUEUE_GET, summary="One queue template"),
    R("PATCH", T, patch_template, action=A.QUEUE_UPDATE,
      summary="Change a template's keys (null clears one)", body="Template",
      reads=Reads(body=FREE)),
    R("DELETE", T, delete_template, action=A.QUEUE_UPDATE, summary="Delete a queue template",
      status="204"),
    # Subscriptions
    R("POST", Q + "/subscriptions", create_subscription, action=A.SUBSCRIPTION_MANAGE,
      summary="Subscribe an http(s) webhook to the queue's messages", status="201",
      errors={"409": "Subscribed and confirmed already"}, body="Subscription",
      reads=Reads(body=SUBSCRIPTION_FIELDS)),
    # python-zaqarclient sends `detailed`, which changes nothing here (each is whole).
    R("GET", Q + "/subscriptions", list_subscriptions, action=A.SUBSCRIPTION_READ,
      summary="Live subscriptions of the queue",
      reads=Reads((*PAGE, "detailed"))),
    R("GET", S, get_subscription, action=A.SUBSCRIPTION_READ, summary="One subscription"),
    R("PATCH", S, update_subscription, action=A.SUBSCRIPTION_MANAGE,
      summary="Change a subscription's subscriber, ttl or options", status="204",
      errors={"409": "The new subscriber is subscribed already"}, body="Subscription",
      reads=Reads(body=SUBSCRIPTION_FIELDS)),
    R("DELETE", S, delete_subscription, action=A.SUBSCRIPTION_MANAGE,
      summary="Unsubscribe (204 even when it did not exist)", status="204"),
    R("PUT", S + "/confirm", confirm_subscription, action=A.SUBSCRIPTION_MANAGE,
      summary="Confirm (or withdraw) a subscription, with the signed URL sent to the"
      " subscriber", status="204", body="Confirmation",
      reads=Reads(body=frozenset({"confirmed"}))),
    # Consumer tags are a queue's consumer groups: making them changes the queue; reading
    # them (with their counts) is its stats.
    R("GET", Q + "/tags", list_tags, action=A.QUEUE_STATS,
      summary="The queue's consumer tags, with their counts"),
    R("PUT", Q + "/tags/{tag}", create_tag, action=A.QUEUE_UPDATE,
      summary="Create a consumer tag on the queue", status="201",
      errors={"409": "The queue has a tag of that name already"}, body="Tag",
      reads=Reads(body=CREATE_FIELDS)),
    R("GET", Q + "/tags/{tag}", get_tag, action=A.QUEUE_STATS,
      summary="One consumer tag, with its counts"),
    R("PATCH", Q + "/tags/{tag}", update_tag, action=A.QUEUE_UPDATE,
      summary="Change a consumer tag's own dead-letter policy and retry backoff",
      body="TagPolicy", reads=Reads(body=frozenset(POLICY_FIELDS))),
    R("DELETE", Q + "/tags/{tag}", delete_tag, action=A.QUEUE_UPDATE,
      summary="Delete a consumer tag (204 even when it did not exist)", status="204"),
]  # fmt: skip


def zaqar_routes(
    engine: Engine, options: AppOptions, table: list[ZaqarRoute] = ROUTES
) -> list[BaseRoute]:
    """The Starlette routes of `table`; a hot row's is a `HotRoute`, which the app answers
    ahead of its router."""
    routes: list[BaseRoute] = []
    for row in table:
        route = (HotRoute if row.hot else Route)(
            row.path,
            endpoint(
                engine,
                options,
                row.handler,
                client_id=row.client_id,
                bounded=row.hot,
                reads=row.reads,
                action_for=row.action_for,
            ),
            methods=[row.method],
        )
        # A parameter never takes a static sibling's path whole: a PATCH of
        # `.../dead_letters/archive` is 405 (Allow: POST), not the edit of a dead letter so named.
        route.path_regex, route.path_format, route.param_convertors = compile_path(
            _sibling_free(row.path, table)
        )
        routes.append(route)
    return routes


def _sibling_free(path: str, table: list[ZaqarRoute]) -> str:
    """`path` with each parameter converted by a convertor that refuses the static segments
    other rows have in its place, for the rows whose whole paths it would otherwise take."""
    mine = path.split("/")
    for i, part in enumerate(mine):
        if not part.startswith("{"):
            continue
        statics = sorted(
            {
                theirs[i]
                for theirs in (r.path.split("/") for r in table)
                if _takes(mine, theirs, i) and theirs[i][0] != "{"
            }
        )
        if statics:
            mine[i] = f"{{{part[1:-1]}:{_convertor_excluding(tuple(statics))}}}"
    return "/".join(mine)


def _takes(mine: list[str], theirs: list[str], at: int) -> bool:
    """Whether a request for `theirs`, with a static segment at `at`, could match `mine`."""
    return len(theirs) == len(mine) and all(
        j == at or a == b or a[0:1] == "{" or b[0:1] == "{"
        for j, (a, b) in enumerate(zip(mine, theirs, strict=True))
    )


def _convertor_excluding(segments: tuple[str, ...]) -> str:
    """The name of a registered path convertor: one segment, none of `segments`."""
    name = "not_" + hashlib.sha256("/".join(segments).encode()).hexdigest()[:16]
    words = "|".join(re.escape(s) for s in segments)
    excluding = type(name, (StringConvertor,), {"regex": f"(?!(?:{words})(?:/|$))[^/]+"})
    register_url_convertor(name, excluding())
    return name
