"""Who a request comes from and whether it may do what it asks, for both faces.

Each face calls one function before its handler: `zaqar_project` (X-Auth-Token, or a Zaqar
signed URL) and `sqs_account` (SigV4). Both answer the project (SQS: the account) the
request acts in, or raise the face's own wire error. The admin routes (tokens, credentials,
queue shares) and the guard of `/metrics` live here too. None of this runs when
authentication is off (`AppOptions.authority` is None).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from deadletter.api import strict_json
from deadletter.api.json_response import JSONResponse
from deadletter.api.sqs.errors import SqsError
from deadletter.api.zaqar.errors import ZaqarError, bad_request, response_for
from deadletter.api.zaqar.reads import Reads, check_fields, check_reads
from deadletter.auth import errors as auth_errors
from deadletter.auth.roles import Action, Role
from deadletter.domain import errors
from deadletter.domain.projects import check_project
from deadletter.engine import Authority, Credential, is_signed_url, parse_role

Endpoint = Callable[[Request], Awaitable[Response]]


def unauthorized(description: str) -> ZaqarError:
    return ZaqarError(401, "Unauthorized", description)


def forbidden(description: str) -> ZaqarError:
    return ZaqarError(403, "Forbidden", description)


def token_credential(authority: Authority, headers: Mapping[str, str]) -> Credential:
    """The credential of `X-Auth-Token` (a token or `KEYID:SECRET`), or of
    `Authorization: Bearer ...`; 401 when there is none or it does not verify."""
    token = headers.get("x-auth-token", "")
    bearer = headers.get("authorization", "")
    if not token and bearer.lower().startswith("bearer "):
        token = bearer[len("bearer ") :].strip()
    if not token:
        raise unauthorized("An X-Auth-Token header is required.")
    try:
        return authority.check_token(token)
    except auth_errors.AuthError as exc:
        raise unauthorized(exc.message) from None


def acting_project(credential: Credential, named: str | None) -> str:
    """The project a request acts in: the credential's own; an operator may name another
    (a tenant or a tenant's derived project, `projects.check_project`)."""
    if named:
        try:
            check_project(named)
        except errors.InvalidInput as exc:
            raise bad_request(str(exc)) from None
    if not named or named == credential.project:
        return credential.project
    if credential.role is Role.OPERATOR:
        return named
    raise forbidden("X-Project-ID names another project than the credential's.")


def zaqar_may(
    authority: Authority, headers: Mapping[str, str], project: str, action: Action
) -> bool:
    """Whether the caller of a Zaqar request, already let in, may also do `action` in
    `project`: a second right that one request needs only sometimes (a post to a queue that
    does not exist creates it). A signed URL grants only what it names."""
    if is_signed_url(headers):
        return False
    return token_credential(authority, headers).may(action, project)


def zaqar_project(
    authority: Authority,
    *,
    action: Action | None,
    method: str,
    path: str,
    headers: Mapping[str, str],
    default_project: str,
) -> str:
    """The project of a Zaqar request that may do `action` (its route's, None for a public
    route), or that a signed URL lets in; ZaqarError otherwise."""
    if is_signed_url(headers):
        try:
            grant = authority.check_signed_url(method, path, headers)
        except auth_errors.AuthError as exc:
            raise ZaqarError(404, "Not found", exc.message) from None
        return grant.project
    if action is None:
        return headers.get("x-project-id") or default_project
    credential = token_credential(authority, headers)
    project = acting_project(credential, headers.get("x-project-id"))
    if not credential.may(action, project):
        raise forbidden(f"The role {credential.role.value} may not do {action.value}.")
    return project


def feed_project(authority: Authority, headers: Mapping[str, str]) -> str:
    """The project whose live events a console feed may show: the token's own (an operator
    may name another), if its role may read the queues' stats; ZaqarError otherwise."""
    credential = token_credential(authority, headers)
    project = acting_project(credential, headers.get("x-project-id"))
    if not credential.may(Action.QUEUE_STATS, project):
        raise forbidden(f"The role {credential.role.value} may not read queue stats.")
    return project


def sqs_account(
    authority: Authority, request: Request, body: bytes, action: str, wanted: Action | None
) -> tuple[str, str, str]:
    """(project, account, region) of a SigV4-signed SQS request whose role allows `wanted`,
    the action its table gives the SQS action `action` (None: one the face does not know,
    refused by its dispatch).

    The account id is the one the credential's project shows in queue URLs and ARNs; the
    queues themselves belong to the project, so both faces see the same queues."""
    raw_path = request.scope.get("raw_path") or request.url.path.encode()
    try:
        credential, region = authority.verify_sigv4(
            request.method,
            raw_path.decode("latin-1").split("?", 1)[0],
            request.scope.get("query_string", b"").decode("latin-1"),
            request.headers.items(),
            body,
        )
    except auth_errors.SigV4Error as exc:
        raise SqsError(exc.code, exc.message, status=exc.status) from None
    except auth_errors.AuthError as exc:
        raise SqsError("InvalidClientTokenId", exc.message, status=403) from None
    account = credential.account_id
    named = request.path_params.get("account")
    if named and named != account:
        if credential.role is not Role.OPERATOR:
            raise _access_denied("The queue URL names another account than the credential's.")
        account = named
    target = (
        credential.project
        if account == credential.account_id
        else authority.project_of_account(account)
    )
    if wanted is not None and not credential.may(wanted, target):
        raise _access_denied(f"The role {credential.role.value} may not call {action}.")
    return target, account, region


def _access_denied(message: str) -> SqsError:
    return SqsError("AccessDenied", message, status=403)


def guarded(authority: Authority, inner: Callable[[str | None], Response]) -> Endpoint:
    """`/metrics`: `inner(None)` (every project) for an operator, `inner(project)` for a
    project's admin, which sees its own project's queues only; 403 for any other role."""

    async def call(request: Request) -> Response:
        try:
            credential = await run_in_threadpool(token_credential, authority, request.headers)
            if credential.role is Role.OPERATOR:
                project = None
            elif credential.role is Role.ADMIN:
                project = credential.project
            else:
                raise forbidden("Only an operator or admin credential may read the metrics.")
        except Exception as exc:
            return response_for(exc, f"{request.method} {request.url.path}")
        return await run_in_threadpool(inner, project)

    return call


# Admin routes

Handler = Callable[[Authority, Request, bytes], Response]


def _json_body(body: bytes) -> dict[str, Any]:
    """The body as every other Zaqar route reads it (strict_json: bounded depth, finite
    numbers, valid Unicode), so no body can make these routes fail with a 500."""
    if not body.strip():
        return {}
    try:
        doc = strict_json.loads(body)
    except strict_json.InvalidJson as exc:
        raise ZaqarError(
            400, "Malformed JSON", f"The request body could not be parsed as JSON: {exc}."
        ) from None
    if not isinstance(doc, dict):
        raise bad_request("The request body must be a JSON object.")
    return doc


def _text(doc: dict[str, Any], name: str, required: bool = True) -> str | None:
    value = doc.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise bad_request(f"`{name}` must be a non-empty string.")
    return value


def credential_json(c: Credential, secret: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "key_id": c.key_id,
        "project": c.project,
        "role": c.role.value,
        "account_id": c.account_id,
        "created_at": c.created_at,
        "revoked": c.revoked,
    }
    if secret is not None:
        doc["secret"] = secret
    return doc


def _manager(authority: Authority, request: Request, project: str | None) -> Credential:
    """The caller, if it may manage the credentials of `project` (None: its own)."""
    credential = token_credential(authority, request.headers)
    target = acting_project(credential, project or request.headers.get("x-project-id"))
    if not credential.may(Action.CREDENTIALS_MANAGE, target):
        raise forbidden("Only an admin of the project or an operator manages credentials.")
    return credential


def issue_token(authority: Authority, request: Request, body: bytes) -> Response:
    doc = _json_body(body)
    key_id, secret = _text(doc, "key_id"), _text(doc, "secret")
    ttl = doc.get("ttl", 3600)
    if not isinstance(ttl, int) or isinstance(ttl, bool) or not 1 <= ttl <= 24 * 3600:
        raise bad_request("`ttl` must be a number of seconds from 1 to 86400.")
    assert key_id is not None and secret is not None
    try:
        token = authority.issue_token(key_id, secret, ttl)
    except auth_errors.AuthError as exc:
        raise unauthorized(exc.message) from None
    expires = authority.now() + ttl
    # The role and project let a client (the console) offer only what the token may do.
    credential = authority.require(key_id)
    doc = {
        "token": token,
        "expires_at": int(expires),
        "role": credential.role.value,
        "project": credential.project,
    }
    return JSONResponse(doc, status_code=201)


def create_credential(authority: Authority, request: Request, body: bytes) -> Response:
    doc = _json_body(body)
    caller = _manager(authority, request, _text(doc, "project", required=False))
    # Parsed before any decision on it: the role checked below is the role stored.
    role = parse_role(_text(doc, "role"))
    project = (
        _text(doc, "project", required=False)
        or request.headers.get("x-project-id")
        or caller.project
    )
    if role is Role.OPERATOR and caller.role is not Role.OPERATOR:
        raise forbidden("Only an operator creates operator credentials.")
    if project != caller.project and caller.role is not Role.OPERATOR:
        raise forbidden("Only an operator creates credentials of another project.")
    credential, secret = authority.create(project, role)
    return JSONResponse(credential_json(credential, secret), status_code=201)


def list_credentials(authority: Authority, request: Request, body: bytes) -> Response:
    named = request.query_params.get("project")
    caller = _manager(authority, request, named)
    project = named or request.headers.get("x-project-id") or caller.project
    if caller.role is Role.OPERATOR and request.query_params.get("all") == "true":
        found = authority.list_for(None)
    else:
        found = authority.list_for(project)
    return JSONResponse({"credentials": [credential_json(c) for c in found]})


def _managed(authority: Authority, request: Request) -> Credential:
    """The credential named in the path, if the caller may manage its project; 404 for a
    credential of a project the caller may not see (its existence is not disclosed)."""
    key_id = str(request.path_params["key_id"])
    caller = token_credential(authority, request.headers)
    found = authority.get(key_id)
    if found is None or not caller.may(Action.CREDENTIALS_MANAGE, found.project):
        if found is not None and caller.project == found.project:
            raise forbidden("Only an admin of the project or an operator manages credentials.")
        raise ZaqarError(404, "Not found", f"Credential {key_id} not found.")
    if found.role is Role.OPERATOR and caller.role is not Role.OPERATOR:
        raise forbidden("Only an operator manages operator credentials.")
    return found


def get_credential(authority: Authority, request: Request, body: bytes) -> Response:
    return JSONResponse(credential_json(_managed(authority, request)))


def revoke_credential(authority: Authority, request: Request, body: bytes) -> Response:
    found = _managed(authority, request)
    return JSONResponse(credential_json(authority.revoke(found.key_id)))


def rotate_credential(authority: Authority, request: Request, body: bytes) -> Response:
    found = _managed(authority, request)
    credential, secret = authority.rotate(found.key_id)
    return JSONResponse(credential_json(credential, secret), status_code=201)


def share_queue(authority: Authority, request: Request, body: bytes) -> Response:
    """Zaqar's `POST /v2/queues/{queue}/share`: a signed URL for the queue's messages or
    claims, for whoever holds it, until it expires."""
    queue = str(request.path_params["queue"])
    project = zaqar_project(
        authority,
        action=Action.QUEUE_SHARE,
        method="POST",
        path=request.url.path,
        headers=request.headers,
        default_project="",
    )
    if authority.engine.find_queue(project, queue) is None:
        raise errors.QueueNotFound(f"Queue {queue} does not exist.")
    doc = _json_body(body)
    names, methods = doc.get("paths"), doc.get("methods")
    for name, value in (("paths", names), ("methods", methods)):
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise bad_request(f"`{name}` must be a list of strings.")
    expires = _text(doc, "expires", required=False)
    try:
        signed = authority.share(project, queue, names, methods, expires)
    except ValueError as exc:
        raise bad_request(str(exc)) from None
    return JSONResponse(signed.as_json())


def _route(authority: Authority, handler: Handler) -> Endpoint:
    reads = ADMIN_READS[handler.__name__]

    async def call(request: Request) -> Response:
        try:
            body = await request.body()
            check_reads(reads, request.method, request.query_params, body)
            if reads.body and body.strip():
                check_fields(reads, _json_body(body))
            return await run_in_threadpool(handler, authority, request, body)
        except Exception as exc:
            return response_for(exc, f"{request.method} {request.url.path}")

    return call


ADMIN_ROUTES: list[tuple[str, str, Handler]] = [
    ("/v2/auth/tokens", "POST", issue_token),
    ("/v2/credentials", "POST", create_credential),
    ("/v2/credentials", "GET", list_credentials),
    ("/v2/credentials/{key_id}", "GET", get_credential),
    ("/v2/credentials/{key_id}", "DELETE", revoke_credential),
    ("/v2/credentials/{key_id}/rotate", "POST", rotate_credential),
    ("/v2/queues/{queue}/share", "POST", share_queue),
]


# What each admin route reads, as each row of the route table says it for the others.
ADMIN_READS: dict[str, Reads] = {
    "issue_token": Reads(body=frozenset({"key_id", "secret", "ttl"})),
    "create_credential": Reads(body=frozenset({"role", "project"})),
    "list_credentials": Reads(("project", "all")),
    "get_credential": Reads(),
    "revoke_credential": Reads(),
    "rotate_credential": Reads(),
    "share_queue": Reads(body=frozenset({"paths", "methods", "expires"})),
}


def admin_routes(authority: Authority) -> list[BaseRoute]:
    return [
        Route(path, _route(authority, handler), methods=[method])
        for path, method, handler in ADMIN_ROUTES
    ]
