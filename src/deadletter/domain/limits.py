"""The server's bounds on what one request or one tenant may take, declared once.

Every check reads its number from `LIMITS`, and docs/limits.md's table of them is generated
from it (`markdown_table`, checked by tests/api/test_limit_table.py), so the number a client is
told is the number enforced. A bound is here when it protects one tenant from another (the
HTTP head, the number of things a tenant keeps, the work one request asks for); the shape of a
single value (a queue name's pattern, a TTL's range) stays with the value's declaration.
"""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True, kw_only=True)
class Limit:
    key: str
    what: str
    value: int
    applies: str  # the routes or actions it bounds
    refusal: str  # what a request past it is answered
    setting: str = ""  # the serve flag that changes it, if any

    @property
    def shown(self) -> str:
        if self.value % MIB == 0 and self.value >= MIB:
            return f"{self.value // MIB} MiB"
        if self.value % KIB == 0 and self.value >= KIB:
            return f"{self.value // KIB} KiB"
        return f"{self.value:,}"


LIMITS: tuple[Limit, ...] = (
    Limit(
        key="request_line",
        what="HTTP request line (method, target with its query, version)",
        value=16 * KIB,
        applies="every request",
        refusal="414, connection closed",
    ),
    Limit(
        key="header_count",
        what="HTTP header fields",
        value=100,
        applies="every request",
        refusal="431, connection closed",
    ),
    Limit(
        key="head_bytes",
        what="HTTP head (request line and header fields together)",
        value=64 * KIB,
        applies="every request",
        refusal="431, connection closed",
    ),
    Limit(
        key="body_bytes",
        what="Request body",
        value=4 * MIB,
        applies="every request",
        refusal="413 (Zaqar JSON, SQS `RequestEntityTooLarge`)",
        setting="--max-body-bytes",
    ),
    Limit(
        key="messages_per_request",
        what="Messages per Zaqar post; ids per `?ids=`; claim `limit`; `pop`",
        value=20,
        applies="`POST`, `GET`, `DELETE /v2/queues/{q}/messages`; `POST .../claims`",
        refusal="400",
    ),
    Limit(
        key="queues_per_tenant",
        what="Queues of one tenant, all SQS regions together",
        value=1_000,
        applies="Zaqar `PUT` queue and first post, SQS `CreateQueue`, templates",
        refusal="403 Zaqar, `OverLimit` SQS",
        setting="--max-queues",
    ),
    Limit(
        key="templates_per_project",
        what="Queue templates of one project",
        value=100,
        applies="`PUT /v2/templates/{name}`",
        refusal="403",
    ),
    Limit(
        key="template_page",
        what="Templates per page of `GET /v2/templates` (`?limit`, `?marker`)",
        value=100,
        applies="`GET /v2/templates`",
        refusal="400 for a larger `?limit`",
    ),
    Limit(
        key="tags_per_queue",
        what="Consumer tags of one queue",
        value=64,
        applies="`PUT /v2/queues/{q}/tags/{tag}`",
        refusal="400",
    ),
    Limit(
        key="live_feeds_per_project",
        what="Console live feeds open for one project (200 in all)",
        value=20,
        applies="`GET /console/events`",
        refusal="503 (the console polls instead)",
    ),
    Limit(
        key="credentials_per_project",
        what="Credentials of one project that are not revoked",
        value=100,
        applies="`POST /v2/credentials` (a rotation replaces one, and is not refused)",
        refusal="403",
    ),
    Limit(
        key="subscriptions_per_queue",
        what="Subscriptions of one queue",
        value=100,
        applies="`POST /v2/queues/{q}/subscriptions`",
        refusal="403",
    ),
    Limit(
        key="subscriptions_per_project",
        what="Subscriptions of one project, all queues together",
        value=1_000,
        applies="`POST /v2/queues/{q}/subscriptions`",
        refusal="403",
    ),
    Limit(
        key="subscriptions_per_socket",
        what="Subscriptions of one WebSocket to queues (pushed to it, never stored)",
        value=16,
        applies="WebSocket `subscription_create` without a `subscriber`",
        refusal="400",
    ),
    # The dead-letter filter language (domain/filters.py): the work one selection asks for.
    Limit(
        key="filter_text",
        what="Characters of one dead-letter filter's value",
        value=1024,
        applies="`GET`/`DELETE .../dead_letters`, `.../dead_letters/count`, a redrive's filter",
        refusal="400",
    ),
    Limit(
        key="filter_pattern",
        what="Characters of a filter's regular expression (`error_matches`; each match of one"
        " dead letter's error stops after 50 ms, and the request is then refused)",
        value=256,
        applies="as `filter_text`",
        refusal="400",
    ),
    Limit(
        key="filter_attributes",
        what="`attribute` filters in one selection",
        value=10,
        applies="as `filter_text`",
        refusal="400",
    ),
)

BY_KEY = {limit.key: limit for limit in LIMITS}


def limit(key: str) -> int:
    return BY_KEY[key].value


REQUEST_LINE = limit("request_line")
HEADER_COUNT = limit("header_count")
HEAD_BYTES = limit("head_bytes")
BODY_BYTES = limit("body_bytes")
MESSAGES_PER_REQUEST = limit("messages_per_request")
QUEUES_PER_TENANT = limit("queues_per_tenant")
TEMPLATES_PER_PROJECT = limit("templates_per_project")
TEMPLATE_PAGE = limit("template_page")
CREDENTIALS_PER_PROJECT = limit("credentials_per_project")
SUBSCRIPTIONS_PER_QUEUE = limit("subscriptions_per_queue")
SUBSCRIPTIONS_PER_PROJECT = limit("subscriptions_per_project")
SUBSCRIPTIONS_PER_SOCKET = limit("subscriptions_per_socket")
FILTER_TEXT = limit("filter_text")
FILTER_PATTERN = limit("filter_pattern")
FILTER_ATTRIBUTES = limit("filter_attributes")


def markdown_table() -> str:
    """docs/limits.md's table, as it must read."""
    rows = ["| What | Limit | Applies to | Past it | Set with |", "|---|---|---|---|---|"]
    for lim in LIMITS:
        setting = f"`{lim.setting}`" if lim.setting else ""
        rows.append(f"| {lim.what} | {lim.shown} | {lim.applies} | {lim.refusal} | {setting} |")
    return "\n".join(rows) + "\n"
