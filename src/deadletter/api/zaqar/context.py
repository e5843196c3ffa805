"""One Zaqar request as a handler sees it (`Ctx`): project and Client-ID headers, JSON body,
query parameters; `endpoint` turns a handler into a Starlette endpoint.

Handlers are synchronous (the engine is). A bounded one (a hot route's: one batch at most)
runs on the event loop when the store can run it at once (`on_loop`), any other in a worker
thread (`in_thread`); `endpoint` reads the body and the Zaqar headers first and turns every
error into Zaqar's `{"title","description"}`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from deadletter.api import strict_json
from deadletter.api.auth import zaqar_may, zaqar_project
from deadletter.api.options import AppOptions
from deadletter.api.threads import in_thread, on_loop
from deadletter.api.zaqar.errors import ZaqarError, bad_request, response_for, shown
from deadletter.api.zaqar.reads import ANYTHING, FREE, Reads, check_fields, check_reads
from deadletter.api.zaqar.serialize import message_json
from deadletter.auth.roles import Action
from deadletter.domain import names
from deadletter.domain.model import Message
from deadletter.domain.projects import check_project
from deadletter.engine import Engine


@dataclass
class Ctx:
    """One request as a handler sees it."""

    request: Request
    engine: Engine
    project: str
    client_id: str | None
    body: bytes
    params: dict[str, str] = field(default_factory=dict)
    options: AppOptions | None = None
    # What the route reads (`endpoint` checks the body's fields before the handler runs).
    reads: Reads = ANYTHING

    @property
    def path(self) -> dict[str, str]:
        return dict(self.request.path_params)

    @property
    def queue(self) -> str:
        return str(self.request.path_params["queue"])

    def may(self, action: Action) -> bool:
        """Whether the caller may also do `action` here (every caller, with auth off)."""
        authority = self.options.authority if self.options else None
        if authority is None:
            return True
        return zaqar_may(authority, self.request.headers, self.project, action)

    def now(self) -> float:
        return self.engine.clock.now()

    @cached_property  # read once per message of an answer
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
        return self.doc

    @cached_property  # parsed once, whoever reads it first
    def doc(self) -> Any:
        """The body parsed, a field the route does not read refused (not a blank body)."""
        doc = parse_body(self.body)
        check_fields(self.reads, doc)
        return doc

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


def parse_body(body: bytes) -> Any:
    try:
        return strict_json.loads(body)
    except strict_json.InvalidJson as exc:
        raise ZaqarError(
            400, "Malformed JSON", f"The request body could not be parsed as JSON: {exc}."
        ) from None


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


def check_client_id(value: str | None) -> str:
    if not value:
        raise bad_request("The Client-ID header is required (a UUID).")
    return _client_id(value)


@lru_cache(maxsize=1024)  # a client sends the same id with every request
def _client_id(value: str) -> str:
    try:
        # One spelling per client, so that echo=false hides its messages however it writes it.
        return str(uuid.UUID(value))
    except ValueError:
        raise bad_request(f"The Client-ID header must be a UUID, not {value!r}.") from None


# The names a path may hold, each checked whole by its kind's one pattern; a queue's is any
# queue name either face makes (an SQS queue is reached through this face too).
PATH_NAMES: dict[str, names.Kind] = {
    "queue": names.QUEUE_REFERENCE,
    "template": names.TEMPLATE,
    "tag": names.TAG,
    "name": names.SAVED_FILTER,  # a filter saved on a DLQ
}


def check_names(path: Mapping[str, Any]) -> None:
    """Refuse a path whose names are not names of their kind before anything is looked up: a
    name is checked whole (no newline at its end, no control character anywhere), so none is
    stored that an answer could not carry. (The project is checked by `check_project`.)"""
    for key, kind in PATH_NAMES.items():
        value = path.get(key)
        if value is not None and not kind.valid(value):
            raise bad_request(f"{shown(value)} is not a {kind.what}: {kind.rule}.")


def check_text_params(request: Request, project: str) -> None:
    """Path parts, query values and the project reach SQL as they are, and PostgreSQL text
    cannot hold NUL: such a request is refused here, alike on every store."""
    # The common case without a NUL anywhere, decided on the raw texts: a query value holds
    # one only as %00 (or a raw NUL byte), a path part only if the decoded path does.
    query = request.scope["query_string"]
    if not ("\x00" in request.scope["path"] or "\x00" in project or b"%00" in query
            or b"\x00" in query):  # fmt: skip
        return
    named = [*request.path_params.items(), *request.query_params.multi_items()]
    for name, value in [*named, ("X-Project-ID", project)]:
        if "\x00" in str(value):
            raise bad_request(f"{name} may not contain NUL characters.")


def endpoint(
    engine: Engine,
    options: AppOptions,
    handler: Handler,
    *,
    client_id: bool,
    bounded: bool,
    reads: Reads,
    action_for: Callable[[Mapping[str, str]], Action | None],
) -> Callable[[Request], Any]:
    """The Starlette endpoint of `handler`, as its route's row declares it (`routes.ROUTES`):
    a `bounded` one (a message route: its work is one batch at most) runs on the event loop
    when the store need not wait (`on_loop`); `reads` is what the route reads (its row's `reads`);
    `action_for` the action a request of it needs, given its query parameters."""

    async def call(request: Request) -> Response:
        try:
            content_type = request.headers.get("content-type", "")
            if "application/x-www-form-urlencoded" in content_type:
                raise bad_request("Form-encoded bodies are not accepted; send JSON.")
            cid = request.headers.get("client-id")
            cid = check_client_id(cid) if client_id else cid
            project = request.headers.get("x-project-id") or options.default_project
            check_text_params(request, project)  # a NUL is named as such, before the rest
            project = check_project(project)
            check_names(request.path_params)
            params = dict(request.query_params)
            if options.authority is not None:
                project = await in_thread(
                    zaqar_project,
                    options.authority,
                    action=action_for(params),
                    method=request.method,
                    path=request.url.path,
                    headers=request.headers,
                    default_project=project,
                )
            body = await request.body()
            check_reads(reads, request.method, params, body)
            ctx = Ctx(
                request, engine, project, cid, body, params=params, options=options, reads=reads
            )
            if reads.body is not None and reads.body is not FREE and body.strip():
                ctx.doc  # noqa: B018 (refused before the handler looks anything up)
            if bounded:
                return await on_loop(engine, handler, ctx)
            return await in_thread(handler, ctx)
        except Exception as exc:
            return response_for(exc, f"{request.method} {request.url.path}")

    return call
