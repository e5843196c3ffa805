"""Zaqar v2 routes with the dead-letter extensions: read the request, call the engine, shape JSON.

Handlers are synchronous (the engine is) and run in a worker thread; `_endpoint` reads the
body and the Zaqar headers first and turns every error into Zaqar's `{"title","description"}`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from deadletter.api.zaqar import metadata as meta
from deadletter.api.zaqar.errors import ZaqarError, bad_request, error_response, response_for
from deadletter.api.zaqar.serialize import (
    encode_body,
    iso,
    message_href,
    message_json,
    parse_time,
    task_href,
    task_json,
)
from deadletter.domain import errors
from deadletter.domain.model import (
    MAX_CLAIM_TTL,
    MAX_DELAY,
    MAX_MESSAGE_SIZE,
    MAX_TTL,
    Attribute,
    DeadLetterFilter,
    ListQuery,
    Message,
    NewMessage,
    Queue,
    QueueSettings,
    Reason,
)
from deadletter.engine.engine import Engine

if TYPE_CHECKING:
    from deadletter.api.app import AppOptions

log = logging.getLogger("deadletter.api.zaqar")

PAGE_LIMIT = 20
MAX_QUEUE_METADATA = 65_536
DEFAULT_GRACE = 60
MAX_DEAD_LETTER_BATCH = 100
PATCH_CONTENT_TYPE = "application/openstack-messaging-v2.0-json-patch"


@dataclass
class Ctx:
    """One request as a handler sees it."""

    request: Request
    engine: Engine
    project: str
    client_id: str | None
    body: bytes
    params: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> dict[str, str]:
        return dict(self.request.path_params)

    @property
    def queue(self) -> str:
        return str(self.request.path_params["queue"])

    def now(self) -> float:
        return self.engine.clock.now()

    @property
    def extended(self) -> bool:
        """Whether messages carry the extension fields (see `wants_extended`)."""
        return wants_extended(self.request.headers)

    def message(self, m: Message, now: float, claim_id: str | None = None) -> dict[str, Any]:
        return message_json(m, now, claim_id, extended=self.extended)

    def json(self, default: Any = None) -> Any:
        if not self.body.strip():
            if default is None:
                raise bad_request("The request body is empty; a JSON document is expected.")
            return default
        try:
            return json.loads(self.body)
        except ValueError:
            raise ZaqarError(
                400, "Malformed JSON", "The request body could not be parsed as JSON."
            ) from None

    def json_object(self, empty_ok: bool = True) -> dict[str, Any]:
        doc = self.json({} if empty_ok else None)
        if not isinstance(doc, dict):
            raise bad_request("The request body must be a JSON object.")
        return doc

    def int_param(self, name: str, default: int, low: int, high: int) -> int:
        raw = self.params.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise bad_request(f"{name} must be an integer, not {raw!r}.") from None
        if not low <= value <= high:
            raise bad_request(f"{name} must be between {low} and {high}, not {value}.")
        return value

    def bool_param(self, name: str, default: bool = False) -> bool:
        raw = self.params.get(name)
        if raw is None or raw == "":
            return default
        if raw.lower() in ("true", "1", "yes"):
            return True
        if raw.lower() in ("false", "0", "no"):
            return False
        raise bad_request(f"{name} must be true or false, not {raw!r}.")


Handler = Callable[[Ctx], Response]
FORMAT_HEADER = "x-deadletter-format"


def wants_extended(headers: Mapping[str, str]) -> bool:
    """python-zaqarclient builds its Message objects with `Message(**json)`, so any field Zaqar
    does not send breaks it. Requests from its HTTP library (python-requests) get Zaqar's own
    message fields unless they ask for `X-Deadletter-Format: extended`; everyone else gets the
    extension fields unless they ask for `X-Deadletter-Format: zaqar`."""
    chosen = headers.get(FORMAT_HEADER, "").lower()
    if chosen in ("zaqar", "extended"):
        return chosen == "extended"
    agent = headers.get("user-agent", "").lower()
    return not agent.startswith(("python-requests/", "python-zaqarclient"))


def _check_client_id(value: str | None) -> str:
    if not value:
        raise bad_request("The Client-ID header is required (a UUID).")
    try:
        # One spelling per client, so that echo=false hides its messages however it writes it.
        return str(uuid.UUID(value))
    except ValueError:
        raise bad_request(f"The Client-ID header must be a UUID, not {value!r}.") from None


def _endpoint(
    engine: Engine, options: AppOptions, handler: Handler, client_id: bool = True
) -> Callable[[Request], Any]:
    async def call(request: Request) -> Response:
        try:
            content_type = request.headers.get("content-type", "")
            if "application/x-www-form-urlencoded" in content_type:
                raise bad_request("Form-encoded bodies are not accepted; send JSON.")
            cid = request.headers.get("client-id")
            cid = _check_client_id(cid) if client_id else cid
            project = request.headers.get("x-project-id") or options.default_project
            if len(project) > 256:
                raise bad_request("X-Project-ID may not be longer than 256 characters.")
            body = await request.body()
            ctx = Ctx(request, engine, project, cid, body, dict(request.query_params))
            return await run_in_threadpool(handler, ctx)
        except (ZaqarError, errors.DeadletterError) as exc:
            return response_for(exc)
        except Exception:
            log.exception(
                "request failed", extra={"method": request.method, "path": request.url.path}
            )
            return error_response(500, "Internal server error", "The request failed; see logs.")

    return call


def _next_link(path: str, params: dict[str, Any]) -> list[dict[str, str]]:
    clean = {k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()}
    return [{"rel": "next", "href": f"{path}?{urlencode(clean)}"}]


# Versions, home, ping, health


def versions(ctx: Ctx) -> Response:
    return JSONResponse(
        {
            "versions": [
                {
                    "id": "2",
                    "status": "CURRENT",
                    "updated": "2014-9-24T04:06:47Z",
                    "media-types": [
                        {
                            "base": "application/json",
                            "type": "application/vnd.openstack.messaging-v2+json",
                        }
                    ],
                    "links": [{"href": "/v2/", "rel": "self"}],
                }
            ]
        },
        status_code=300,
    )


def home(ctx: Ctx) -> Response:
    resources = {
        "rel/queues": "/v2/queues{?marker,limit,detailed,with_count}",
        "rel/queue": "/v2/queues/{queue_name}",
        "rel/queue_stats": "/v2/queues/{queue_name}/stats",
        "rel/messages": "/v2/queues/{queue_name}/messages{?marker,limit,echo,include_claimed}",
        "rel/post_messages": "/v2/queues/{queue_name}/messages",
        "rel/claim": "/v2/queues/{queue_name}/claims{?limit}",
        "rel/dead_letters": "/v2/queues/{queue_name}/dead_letters{?source_queue,reason,since,"
        "until,marker,limit}",
        "rel/dead_letter_sources": "/v2/queues/{queue_name}/dead_letter_sources",
        "rel/redrives": "/v2/queues/{queue_name}/redrives",
        "rel/patterns": "/v2/queues/{queue_name}/patterns",
        "rel/ping": "/v2/ping",
        "rel/health": "/v2/health",
    }
    return JSONResponse(
        {
            "resources": {
                name: {"href-template": href} if "{" in href else {"href": href}
                for name, href in resources.items()
            }
        },
        media_type="application/json-home",
    )


def ping(ctx: Ctx) -> Response:
    return Response(status_code=204)


def health(ctx: Ctx) -> Response:
    try:
        ctx.engine.list_queues(ctx.project, limit=1)
    except Exception as exc:
        return JSONResponse(
            {"storage_reachable": False, "error": type(exc).__name__}, status_code=503
        )
    return JSONResponse({"storage_reachable": True, "catalog_reachable": True})


# Queues


def list_queues(ctx: Ctx) -> Response:
    limit = ctx.int_param("limit", 10, 1, PAGE_LIMIT)
    marker = ctx.params.get("marker") or None
    detailed = ctx.bool_param("detailed")
    queues = ctx.engine.list_queues(ctx.project, after=marker, limit=limit)
    out: dict[str, Any] = {
        "queues": [
            {"name": q.name, "href": f"/v2/queues/{q.name}"}
            | ({"metadata": meta.to_metadata(q)} if detailed else {})
            for q in queues
        ],
        "links": [],
    }
    if queues:
        out["links"] = _next_link(
            "/v2/queues", {"marker": queues[-1].name, "limit": limit, "detailed": detailed}
        )
    if ctx.bool_param("with_count"):
        out["count"] = len(ctx.engine.list_queues(ctx.project, limit=1_000_000_000))
    return JSONResponse(out)


def create_queue(ctx: Ctx) -> Response:
    meta.check_queue_name(ctx.queue)
    if len(ctx.body) > MAX_QUEUE_METADATA:
        raise bad_request(f"Queue metadata may not be larger than {MAX_QUEUE_METADATA} bytes.")
    settings = meta.to_settings(ctx.json_object())
    if ctx.engine.find_queue(ctx.project, ctx.queue) is not None:
        return Response(status_code=204)
    try:
        ctx.engine.create_queue(ctx.project, ctx.queue, settings)
    except errors.QueueAlreadyExists:
        return Response(status_code=204)
    return Response(status_code=201, headers={"Location": f"/v2/queues/{ctx.queue}"})


def get_queue(ctx: Ctx) -> Response:
    return JSONResponse(meta.to_metadata(ctx.engine.get_queue(ctx.project, ctx.queue)))


def patch_queue(ctx: Ctx) -> Response:
    content_type = ctx.request.headers.get("content-type", "").split(";")[0].strip()
    if content_type != PATCH_CONTENT_TYPE:
        raise ZaqarError(
            415, "Unsupported media type", f"PATCH needs Content-Type: {PATCH_CONTENT_TYPE}."
        )
    ops = ctx.json()
    if not isinstance(ops, list) or not ops:
        raise bad_request("The body must be a non-empty JSON list of patch operations.")

    def patched(queue: Queue) -> QueueSettings:
        view = meta.to_metadata(queue)
        for op in ops:
            key, value = _patch_op(op)
            if key in meta.READ_ONLY and op["op"] != "remove":
                raise bad_request(f"{key} is read-only.")
            if op["op"] == "remove" and key in meta.RESERVED:
                # A reserved key always exists (GET shows it, maybe as null): removing it restores
                # its default. Clients that replace the whole metadata remove every key they omit.
                view[key] = None
                continue
            if op["op"] in ("replace", "remove") and view.get(key) is None:
                raise ZaqarError(
                    409, "Unable to patch metadata", f"The metadata key {key!r} does not exist."
                )
            if op["op"] == "remove":
                del view[key]
            else:
                view[key] = value
        s = queue.settings
        base = meta.ZAQAR_DEFAULTS.with_changes(
            tags=s.tags, extra=s.extra, receive_wait=s.receive_wait
        )
        return meta.to_settings(view, base)

    updated = ctx.engine.change_settings(ctx.project, ctx.queue, patched)
    return JSONResponse(meta.to_metadata(updated))


def _patch_op(op: Any) -> tuple[str, Any]:
    if not isinstance(op, dict) or op.get("op") not in ("add", "replace", "remove"):
        raise bad_request('Each patch operation needs "op": add, replace or remove.')
    path = op.get("path")
    prefix = "/metadata/"
    if not isinstance(path, str) or not path.startswith(prefix) or len(path) == len(prefix):
        raise bad_request('Each patch operation needs "path": "/metadata/<key>".')
    if op["op"] != "remove" and "value" not in op:
        raise bad_request(f'The {op["op"]} operation needs a "value".')
    return path[len(prefix) :], op.get("value")


def delete_queue(ctx: Ctx) -> Response:
    ctx.engine.delete_queue(ctx.project, ctx.queue)
    return Response(status_code=204)


def _brief(m: Message | None, now: float) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "id": m.id,
        "href": message_href(m.queue, m.id),
        "age": max(0, int(now - m.enqueued_at)),
        "created": iso(m.enqueued_at),
    }


def queue_stats(ctx: Ctx) -> Response:
    st = ctx.engine.stats(ctx.project, ctx.queue)
    now = ctx.now()
    messages: dict[str, Any] = {
        "free": st.free,
        "claimed": st.claimed,
        "delayed": st.delayed,
        "total": st.total,
    }
    if st.total:
        messages["oldest"] = _brief(st.oldest, now)
        messages["newest"] = _brief(st.newest, now)
    return JSONResponse(
        {
            "messages": messages,
            "dead_letter": {
                "dead_lettered": st.dead_lettered,
                "expired_dropped": st.expired_dropped,
                "acknowledged": st.acknowledged,
                "by_source": st.by_source,
                "policy_active": st.policy_active,
            },
        }
    )


def purge_queue(ctx: Ctx) -> Response:
    doc = ctx.json_object()
    kinds = doc.get("resource_types", ["messages", "subscriptions"])
    if not isinstance(kinds, list) or not set(kinds) <= {"messages", "subscriptions"}:
        raise bad_request('resource_types must list "messages" and/or "subscriptions".')
    ctx.engine.get_queue(ctx.project, ctx.queue)
    if "messages" in kinds:
        ctx.engine.purge(ctx.project, ctx.queue)
    return Response(status_code=204)


# Messages


def _new_message(doc: Any) -> NewMessage:
    if not isinstance(doc, dict) or "body" not in doc:
        raise bad_request('Each message must be a JSON object with a "body".')
    ttl = doc.get("ttl")
    if ttl is not None and (
        isinstance(ttl, bool) or not isinstance(ttl, int) or not meta.MIN_TTL <= ttl <= MAX_TTL
    ):
        raise bad_request(
            f"The TTL for a message may not exceed {MAX_TTL} seconds, and must be"
            f" at least {meta.MIN_TTL} seconds long, not {ttl!r}."
        )
    delay = doc.get("delay")
    if delay is not None and (
        isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= MAX_DELAY
    ):
        raise bad_request(f"The delay of a message must be between 0 and {MAX_DELAY} seconds.")
    eligible = doc.get("dead_letter_eligible")
    if eligible is not None and not isinstance(eligible, bool):
        raise bad_request("dead_letter_eligible must be true or false.")
    return NewMessage(
        body=encode_body(doc["body"]),
        ttl=ttl,
        delay=delay,
        attributes=_attributes(doc.get("attributes")),
        dead_letter_eligible=eligible,
    )


def _attributes(raw: Any) -> dict[str, Attribute]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise bad_request('attributes must be an object of {name: {"type", "value"}}.')
    out = {}
    for name, a in raw.items():
        if not (isinstance(a, dict) and isinstance(a.get("type"), str)):
            raise bad_request(f'attribute {name!r} needs a "type" and a string "value".')
        value = a.get("value")
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise bad_request(f'attribute {name!r} needs a "type" and a string "value".')
        out[name] = Attribute(a["type"], value)
    return out


def post_messages(ctx: Ctx) -> Response:
    queue = ctx.engine.find_queue(ctx.project, ctx.queue)
    if queue is None:  # the post creates it; an existing queue may have an SQS-length name
        meta.check_queue_name(ctx.queue)
    limit = min(MAX_MESSAGE_SIZE, queue.settings.max_message_size if queue else MAX_MESSAGE_SIZE)
    if len(ctx.body) > limit:
        raise bad_request(f"The request body may not be larger than {limit} bytes.")
    doc = ctx.json()
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(messages, list) or not messages:
        raise bad_request('The body must be {"messages": [...]} with at least one message.')
    news = [_new_message(m) for m in messages]
    if queue is None:
        # Zaqar creates a queue on its first message.
        with contextlib.suppress(errors.QueueAlreadyExists):
            ctx.engine.create_queue(ctx.project, ctx.queue, meta.ZAQAR_DEFAULTS)
    sent = ctx.engine.send(ctx.project, ctx.queue, news, client_id=ctx.client_id)
    ids = ",".join(m.id for m in sent)
    return JSONResponse(
        {"resources": [message_href(ctx.queue, m.id) for m in sent]},
        status_code=201,
        headers={"Location": f"/v2/queues/{ctx.queue}/messages?ids={ids}"},
    )


def _ids(ctx: Ctx) -> list[str]:
    ids = [i for i in ctx.params.get("ids", "").split(",") if i]
    if not ids:
        raise bad_request("ids must list at least one message id.")
    if len(ids) > PAGE_LIMIT:
        raise bad_request(f"No more than {PAGE_LIMIT} message ids at once.")
    return ids


def list_messages(ctx: Ctx) -> Response:
    now = ctx.now()
    if "ids" in ctx.params:
        found = ctx.engine.get_messages(ctx.project, ctx.queue, _ids(ctx))
        if not found:
            raise errors.MessageNotFound("none of the messages exist")
        return JSONResponse({"messages": [ctx.message(m, now) for m in found]})
    limit = ctx.int_param("limit", 10, 1, PAGE_LIMIT)
    marker = ctx.int_param("marker", 0, 0, 2**63 - 1)
    echo = ctx.bool_param("echo")
    include_claimed = ctx.bool_param("include_claimed")
    include_delayed = ctx.bool_param("include_delayed")
    query = ListQuery(
        after_seq=marker,
        limit=limit,
        include_claimed=include_claimed,
        include_delayed=include_delayed,
        exclude_client_id=None if echo else ctx.client_id,
    )
    try:
        found = ctx.engine.list_messages(ctx.project, ctx.queue, query)
    except errors.QueueNotFound:
        # Zaqar lists a queue that does not exist as an empty one.
        found = []
    links: list[dict[str, str]] = []
    if found:
        links = _next_link(
            f"/v2/queues/{ctx.queue}/messages",
            {
                "marker": found[-1].seq,
                "limit": limit,
                "echo": echo,
                "include_claimed": include_claimed,
                "include_delayed": include_delayed,
            },
        )
    return JSONResponse({"messages": [ctx.message(m, now) for m in found], "links": links})


def delete_messages(ctx: Ctx) -> Response:
    if "pop" in ctx.params:
        if "ids" in ctx.params:
            raise bad_request("Give either ids or pop, not both.")
        count = ctx.int_param("pop", 1, 1, PAGE_LIMIT)
        now = ctx.now()
        try:
            popped = ctx.engine.pop(ctx.project, ctx.queue, count)
        except errors.QueueNotFound:
            popped = []
        return JSONResponse({"messages": [ctx.message(m, now) for m in popped]})
    if "ids" not in ctx.params:
        raise bad_request("Give ids=<id,...> or pop=<n>.")
    with contextlib.suppress(errors.QueueNotFound):
        ctx.engine.delete_messages(ctx.project, ctx.queue, _ids(ctx))
    return Response(status_code=204)


def get_message(ctx: Ctx) -> Response:
    m = ctx.engine.get_message(ctx.project, ctx.queue, ctx.path["message_id"])
    return JSONResponse(ctx.message(m, ctx.now()))


def delete_message(ctx: Ctx) -> Response:
    # Deleting is idempotent in Zaqar: a message already gone is fine.
    with contextlib.suppress(errors.MessageNotFound, errors.QueueNotFound):
        ctx.engine.delete_message(
            ctx.project, ctx.queue, ctx.path["message_id"], ctx.params.get("claim_id") or None
        )
    return Response(status_code=204)


# Claims


def _claim_times(doc: dict[str, Any], ttl: int | None, grace: int | None) -> tuple[Any, Any]:
    for key in ("ttl", "grace"):
        value = doc.get(key)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not meta.MIN_TTL <= value <= MAX_CLAIM_TTL
        ):
            raise bad_request(
                f"The {key} for a claim must be between {meta.MIN_TTL} and {MAX_CLAIM_TTL}"
                f" seconds, not {value!r}."
            )
    # null means "the default", as python-zaqarclient sends it for an unset grace.
    return (
        ttl if doc.get("ttl") is None else doc["ttl"],
        grace if doc.get("grace") is None else doc["grace"],
    )


def create_claim(ctx: Ctx) -> Response:
    limit = ctx.int_param("limit", 10, 1, PAGE_LIMIT)
    ttl, grace = _claim_times(ctx.json_object(), None, DEFAULT_GRACE)
    try:
        claim = ctx.engine.claim(ctx.project, ctx.queue, limit, ttl=ttl, grace=grace)
    except errors.QueueNotFound:
        return Response(status_code=204)
    if not claim.messages:
        return Response(status_code=204)
    now = ctx.now()
    return JSONResponse(
        {"messages": [ctx.message(m, now, claim.id) for m in claim.messages]},
        status_code=201,
        headers={"Location": f"/v2/queues/{ctx.queue}/claims/{claim.id}"},
    )


def get_claim(ctx: Ctx) -> Response:
    claim_id = ctx.path["claim_id"]
    claim = ctx.engine.get_claim(ctx.project, ctx.queue, claim_id)
    now = ctx.now()
    return JSONResponse(
        {
            "age": max(0, int(now - claim.created_at)),
            "ttl": claim.ttl,
            "grace": claim.grace,
            "href": f"/v2/queues/{ctx.queue}/claims/{claim_id}",
            "messages": [ctx.message(m, now, claim_id) for m in claim.messages],
        }
    )


def renew_claim(ctx: Ctx) -> Response:
    claim_id = ctx.path["claim_id"]
    ttl, grace = _claim_times(ctx.json_object(), None, None)
    if ttl is None:
        ttl = ctx.engine.get_claim(ctx.project, ctx.queue, claim_id).ttl
    ctx.engine.renew_claim(ctx.project, ctx.queue, claim_id, ttl, grace)
    return Response(status_code=204)


def release_claim(ctx: Ctx) -> Response:
    with contextlib.suppress(errors.NotFound):
        ctx.engine.release_claim(ctx.project, ctx.queue, ctx.path["claim_id"])
    return Response(status_code=204)


# Dead-letter extensions


def _claim_id(ctx: Ctx) -> str:
    claim_id = ctx.params.get("claim_id")
    if not claim_id:
        raise ZaqarError(403, "Claim required", "Give claim_id: only the claim holder may.")
    return claim_id


def _text(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise bad_request(f"{key} must be a string.")
    return value


def dead_letter_message(ctx: Ctx) -> Response:
    claim_id = _claim_id(ctx)
    doc = ctx.json_object()
    moved = ctx.engine.dead_letter(
        ctx.project,
        ctx.queue,
        [(ctx.path["message_id"], claim_id)],
        _text(doc, "description"),
        _text(doc, "error"),
    )
    return JSONResponse({"message": ctx.message(moved[0], ctx.now())})


def dead_letter_batch(ctx: Ctx) -> Response:
    doc = ctx.json_object(empty_ok=False)
    items = doc.get("messages")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_DEAD_LETTER_BATCH:
        raise bad_request(
            f'"messages" must list 1 to {MAX_DEAD_LETTER_BATCH} {{"id", "claim_id"}}.'
        )
    held = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise bad_request('Each entry needs an "id" and a "claim_id".')
        if not isinstance(item.get("claim_id"), str) or not item["claim_id"]:
            raise ZaqarError(403, "Claim required", f"Message {item['id']!r} needs a claim_id.")
        held.append((item["id"], item["claim_id"]))
    moved = ctx.engine.dead_letter(
        ctx.project, ctx.queue, held, _text(doc, "description"), _text(doc, "error")
    )
    now = ctx.now()
    return JSONResponse({"messages": [ctx.message(m, now) for m in moved]})


def release_message(ctx: Ctx) -> Response:
    claim_id = _claim_id(ctx)
    delay = ctx.json_object().get("delay", 0)
    if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= MAX_CLAIM_TTL:
        raise bad_request(f"delay must be between 0 and {MAX_CLAIM_TTL} seconds.")
    ctx.engine.release_message(ctx.project, ctx.queue, ctx.path["message_id"], claim_id, delay)
    return Response(status_code=204)


def _reason(value: Any) -> Reason | None:
    if value is None or value == "":
        return None
    try:
        return Reason(value)
    except ValueError:
        raise bad_request(
            f"reason must be one of {', '.join(r.value for r in Reason)}, not {value!r}."
        ) from None


def _time_value(name: str, value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if value is None or isinstance(value, str):
        return parse_time(name, value)
    raise bad_request(f"{name} must be an ISO 8601 time or epoch seconds.")


def list_dead_letters(ctx: Ctx) -> Response:
    limit = ctx.int_param("limit", 100, 1, 1000)
    marker = ctx.int_param("marker", 0, 0, 2**63 - 1)
    where = DeadLetterFilter(
        source_queue=ctx.params.get("source_queue") or None,
        reason=_reason(ctx.params.get("reason")),
        since=parse_time("since", ctx.params.get("since")),
        until=parse_time("until", ctx.params.get("until")),
    )
    found = ctx.engine.list_dead_letters(ctx.project, ctx.queue, where, marker, limit)
    now = ctx.now()
    links: list[dict[str, str]] = []
    if len(found) == limit:
        params = {k: v for k, v in ctx.params.items() if k not in ("marker", "limit") and v}
        links = _next_link(
            f"/v2/queues/{ctx.queue}/dead_letters",
            {**params, "marker": found[-1].seq, "limit": limit},
        )
    return JSONResponse({"messages": [ctx.message(m, now) for m in found], "links": links})


def dead_letter_sources(ctx: Ctx) -> Response:
    sources = ctx.engine.dead_letter_sources(ctx.project, ctx.queue)
    out = []
    for q in sources:
        policy = q.settings.dead_letter
        assert policy is not None
        out.append(
            {
                "name": q.name,
                "href": f"/v2/queues/{q.name}",
                "max_claim_count": policy.max_claims,
                "active": policy.active,
            }
        )
    return JSONResponse({"sources": out})


def start_redrive(ctx: Ctx) -> Response:
    doc = ctx.json_object()
    destination = _text(doc, "destination")
    ids = doc.get("message_ids")
    if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
        raise bad_request("message_ids must be a list of message ids.")
    pattern_id = _text(doc, "pattern_id")
    if pattern_id is not None:
        if ids is not None:
            raise bad_request("Give message_ids or pattern_id, not both.")
        ids = list(ctx.engine.pattern_message_ids(ctx.project, ctx.queue, pattern_id))
    rate = doc.get("rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float)):
        raise bad_request("rate must be a number of messages per second.")
    where = DeadLetterFilter(
        source_queue=_text(doc, "source_queue"),
        reason=_reason(doc.get("reason")),
        since=_time_value("since", doc.get("since")),
        until=_time_value("until", doc.get("until")),
        message_ids=tuple(ids) if ids is not None else None,
    )
    task = ctx.engine.start_redrive(ctx.project, ctx.queue, destination, where, rate)
    return JSONResponse(
        task_json(task, pattern_id), status_code=201, headers={"Location": task_href(task)}
    )


def list_redrives(ctx: Ctx) -> Response:
    ctx.engine.get_queue(ctx.project, ctx.queue)
    tasks = ctx.engine.list_tasks(ctx.project, ctx.queue)
    return JSONResponse({"redrives": [task_json(t) for t in tasks]})


def get_redrive(ctx: Ctx) -> Response:
    task = ctx.engine.get_task(ctx.project, ctx.queue, ctx.path["task_id"])
    return JSONResponse(task_json(task))


def cancel_redrive(ctx: Ctx) -> Response:
    task = ctx.engine.cancel_redrive(ctx.project, ctx.queue, ctx.path["task_id"])
    return JSONResponse(task_json(task), status_code=202)


def put_patterns(ctx: Ctx) -> Response:
    doc = ctx.json_object(empty_ok=False)
    patterns = doc.get("patterns")
    if not isinstance(patterns, list) or not all(
        isinstance(p, dict) and isinstance(p.get("id"), str) for p in patterns
    ):
        raise bad_request('The body must be {"patterns": [{"id": ..., ...}]}.')
    ctx.engine.save_patterns(ctx.project, ctx.queue, patterns)
    return Response(status_code=204)


def get_patterns(ctx: Ctx) -> Response:
    return JSONResponse({"patterns": ctx.engine.get_patterns(ctx.project, ctx.queue)})


# The table of routes: (path, method, handler, needs Client-ID)
Q = "/v2/queues/{queue}"
M = Q + "/messages/{message_id}"
ROUTES: list[tuple[str, str, Handler, bool]] = [
    ("/", "GET", versions, False),
    ("/v2", "GET", home, False),
    ("/v2/", "GET", home, False),
    ("/v2/ping", "GET", ping, False),
    ("/v2/health", "GET", health, False),
    ("/v2/queues", "GET", list_queues, True),
    (Q, "PUT", create_queue, True),
    (Q, "GET", get_queue, True),
    (Q, "PATCH", patch_queue, True),
    (Q, "DELETE", delete_queue, True),
    (Q + "/stats", "GET", queue_stats, True),
    (Q + "/purge", "POST", purge_queue, True),
    (Q + "/messages", "POST", post_messages, True),
    (Q + "/messages", "GET", list_messages, True),
    (Q + "/messages", "DELETE", delete_messages, True),
    (M, "GET", get_message, True),
    (M, "DELETE", delete_message, True),
    (M + "/dead_letter", "POST", dead_letter_message, True),
    (M + "/release", "POST", release_message, True),
    (Q + "/claims", "POST", create_claim, True),
    (Q + "/claims/{claim_id}", "GET", get_claim, True),
    (Q + "/claims/{claim_id}", "PATCH", renew_claim, True),
    (Q + "/claims/{claim_id}", "DELETE", release_claim, True),
    (Q + "/dead_letter", "POST", dead_letter_batch, True),
    (Q + "/dead_letters", "GET", list_dead_letters, True),
    (Q + "/dead_letter_sources", "GET", dead_letter_sources, True),
    (Q + "/redrives", "POST", start_redrive, True),
    (Q + "/redrives", "GET", list_redrives, True),
    (Q + "/redrives/{task_id}", "GET", get_redrive, True),
    (Q + "/redrives/{task_id}", "DELETE", cancel_redrive, True),
    (Q + "/patterns", "PUT", put_patterns, True),
    (Q + "/patterns", "GET", get_patterns, True),
]


def zaqar_routes(engine: Engine, options: AppOptions) -> list[BaseRoute]:
    return [
        Route(path, _endpoint(engine, options, handler, client_id), methods=[method])
        for path, method, handler, client_id in ROUTES
    ]
