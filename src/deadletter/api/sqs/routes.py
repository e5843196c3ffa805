"""The SQS face: `POST /` and `POST /<account>/<queue>` in either wire protocol, and the
query protocol over GET too (`GET /?Action=...`), as AWS takes it.

The account (the engine's project) is the access key id when that is a 12-digit account
number, as moto does, else the server's default account; the region comes from the SigV4
credential scope. Queue URLs are built from the request's own host.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from deadletter.api.auth import sqs_account
from deadletter.api.hot import HotRoute
from deadletter.api.json_response import JSONResponse
from deadletter.api.listeners import for_engine
from deadletter.api.notify import Notifier
from deadletter.api.options import AppOptions
from deadletter.api.sqs import wire
from deadletter.api.sqs.actions import OPERATIONS, Call
from deadletter.api.sqs.errors import (
    SqsError,
    from_exception,
    invalid_parameter,
    queue_does_not_exist,
)
from deadletter.api.sqs.parameters import check_parameters
from deadletter.api.strict_json import InvalidJson, loads
from deadletter.api.threads import in_thread, on_loop
from deadletter.domain import names
from deadletter.domain.projects import regional
from deadletter.engine import Authority, Engine

TARGET_PREFIX = "AmazonSQS."
STS_NAMESPACE = "https://sts.amazonaws.com/doc/2011-06-15/"
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/")


def _queue_region(params: dict[str, Any], path_region: str | None, home: str) -> str | None:
    """The region a queue URL names, which wins over the credential's as on AWS (a URL's
    host is its region's endpoint): `/<region>/<account>/<name>`; else a region named by the
    host (`sqs.eu-west-1.amazonaws.com`, `eu-west-1.queue.amazonaws.com`); else the home
    region. None when the request names its queue by name or not at all."""
    if path_region is not None:
        if not names.REGION.valid(path_region):
            raise queue_does_not_exist()
        return path_region
    url = params.get("QueueUrl")
    if not isinstance(url, str) or "://" not in url:
        return None
    host, *path = url.split("://", 1)[1].split("/")
    parts = [p for p in path if p]
    if len(parts) >= 3 and names.REGION.valid(parts[-3]):
        return parts[-3]
    named = [label for label in host.split(":")[0].split(".") if names.REGION.valid(label)]
    return named[0] if named else home


@dataclass(frozen=True)
class Caller:
    """Who an SQS request acts as: the project its queues belong to, the account its queue
    URLs and ARNs show, and the region it is in."""

    project: str
    account: str
    region: str


class SqsEndpoint:
    """The one endpoint of the SQS face, in steps: read the request, say who calls
    (`identify`), check that it may (`authorise`), place it in its region (`locate`), call its
    action (`dispatch`) and write the answer in the request's protocol (`render`)."""

    def __init__(self, engine: Engine, options: AppOptions, notifier: Notifier) -> None:
        self.engine = engine
        self.options = options
        self.notifier = notifier

    async def endpoint(self, request: Request) -> Response:
        target = request.headers.get("x-amz-target", "")
        use_json = target.startswith(TARGET_PREFIX)
        request_id = wire.new_request_id()
        try:
            action, params, clean = await _read(request, use_json)
            caller = self.identify(request)
            if self.options.authority is not None:
                caller = await self.authorise(request, self.options.authority, action)
            if action == "GetCallerIdentity" and self.options.test_mode and not use_json:
                return _caller_identity(caller.account, request_id)
            caller = self.locate(request, params, caller)
            result = await self.dispatch(request, action, params, clean, caller)
            # Rendered inside the try: a result that cannot be written is a logged 500 too.
            return render(action, result, use_json, request_id)
        except Exception as exc:
            error = from_exception(exc, f"{target or 'query'} {request.url.path}")
            return _error(error, use_json, request_id)

    def identify(self, request: Request) -> Caller:
        """The caller as the request names it: the account of its queue URL's path, else of
        its access key (signed in its header or, presigned, in its query); the region of its
        credential's scope."""
        options = self.options
        found = _CREDENTIAL.search(request.headers.get("authorization", "")) or (
            _CREDENTIAL.search(f"Credential={request.query_params.get('X-Amz-Credential', '')},")
        )
        account, region = options.default_project, options.region
        if found:
            key, region = found.groups()
            account = key if names.ACCOUNT.valid(key) else options.default_project
        account = request.path_params.get("account", account)
        wire.check_text([account, request.path_params.get("queue", "")], "QueueUrl")
        if not names.PROJECT.valid(account):
            raise invalid_parameter(f"The queue URL's account is not {names.PROJECT.rule}.")
        return Caller(account, account, region)

    async def authorise(self, request: Request, authority: Authority, action: str) -> Caller:
        """The caller its verified signature names, if its role allows the action (its row's
        permission in `OPERATIONS`); SqsError otherwise."""
        operation = OPERATIONS.get(action)
        permission = operation.permission if operation is not None else None
        body = await request.body()
        project, account, region = await run_in_threadpool(
            sqs_account, authority, request, body, action, permission
        )
        return Caller(project, account, region)

    def locate(self, request: Request, params: dict[str, Any], caller: Caller) -> Caller:
        """The caller in the region its queue URL names, if it names one (as on AWS, where a
        URL's host is its region's endpoint), else its credential's; the project the region's
        queues belong to."""
        home = self.options.region
        region = _queue_region(params, request.path_params.get("region"), home) or caller.region
        if not names.REGION.valid(region):
            raise SqsError(
                "IncompleteSignature",
                f"Credential should be scoped to a valid region, not '{region}'.",
            )
        return Caller(regional(caller.project, region, home), caller.account, region)

    async def dispatch(
        self,
        request: Request,
        action: str,
        params: dict[str, Any],
        clean: bool,
        caller: Caller,
    ) -> dict[str, Any]:
        """The result of `action`'s handler, run as its row says (`actions.Operation`)."""
        call = Call(
            engine=self.engine,
            notifier=self.notifier,
            params=params,
            project=caller.project,
            account=caller.account,
            region=caller.region,
            request_base=lambda: str(request.base_url).rstrip("/"),
            path_queue=request.path_params.get("queue"),
            home_region=self.options.region,
            clean=clean,
        )
        check_parameters(action, params)
        operation = OPERATIONS.get(action)
        if operation is None:
            raise SqsError(
                "InvalidAction",
                f"The action {action or '(none)'} is not valid for this web service.",
            )
        if operation.is_async:
            return await operation.handler(call)  # type: ignore[no-any-return,misc]
        if operation.bounded:
            return await on_loop(self.engine, operation.handler, call)  # type: ignore[arg-type]
        return await in_thread(operation.handler, call)  # type: ignore[arg-type]


def render(action: str, result: dict[str, Any], use_json: bool, request_id: str) -> Response:
    """An action's result in the request's protocol: JSON, or the query protocol's XML."""
    headers = {wire.REQUEST_ID_HEADER: request_id}
    if use_json:
        return JSONResponse(result, headers=headers, media_type=wire.JSON_CONTENT_TYPE)
    xml = wire.xml_response(action, result, request_id=request_id)
    return Response(xml, headers=headers, media_type="text/xml")


# The face's paths: its queue URLs, and `/` for a request that names its queue in a parameter.
PATHS = ("/", "/{account}/{queue}", "/{region}/{account}/{queue}")
# `POST /` carries nearly every message action of a boto3 client: answered ahead of the router.
HOT_PATHS = frozenset({"/"})


def sqs_routes(
    engine: Engine, options: AppOptions, notifier: Notifier | None = None
) -> list[BaseRoute]:
    """The SQS face's routes; `notifier` wakes its long polls (one of their own if None)."""
    notifier = notifier or Notifier(engine)
    for_engine(engine).add(notifier)
    endpoint = SqsEndpoint(engine, options, notifier).endpoint

    async def reset(request: Request) -> Response:
        await run_in_threadpool(engine.wipe)
        return JSONResponse({"status": "ok"})

    routes: list[BaseRoute] = []
    for path in PATHS:
        post = HotRoute if path in HOT_PATHS else Route
        routes += [QueryGet(path, endpoint), post(path, endpoint, methods=["POST"])]
    # moto's reset, for test suites: it wipes every queue with no credential, so it exists
    # only in test mode, which the server allows only on loopback without auth (config.py).
    if options.test_mode:
        routes.insert(0, Route("/moto-api/reset", reset, methods=["POST"]))
    return routes


class QueryGet(Route):
    """A GET in the query protocol, which AWS takes beside POST: only one whose query string
    names an Action, so that any other `GET /` stays Zaqar's versions document."""

    def __init__(self, path: str, endpoint: Any) -> None:
        super().__init__(path, endpoint, methods=["GET"])

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        # The raw bytes, undecoded: a query string that is not text is the handler's to refuse.
        fields = scope.get("query_string", b"").split(b"&")
        if scope.get("method") == "GET" and any(f.split(b"=")[0] == b"Action" for f in fields):
            return super().matches(scope)
        return Match.NONE, {}


async def _read(request: Request, use_json: bool) -> tuple[str, dict[str, Any], bool]:
    """(action, parameters in the JSON protocol's shape, whether every text in them, message
    bodies too, is known to hold only characters SQS accepts), every text but the bodies
    checked; a body that cannot be read is the client's fault, and only here is a decoding
    error taken to mean that."""
    body = await request.body()
    if use_json:
        try:
            params = loads(body) if body.strip() else {}
        except InvalidJson as exc:
            raise SqsError("SerializationException", f"The body is not valid JSON: {exc}") from None
        if not isinstance(params, dict):
            raise SqsError("SerializationException", "The body must be a JSON object.")
        action = request.headers["x-amz-target"][len(TARGET_PREFIX) :]
        if wire.clean_json(body):  # as boto3 sends them, checked without a walk
            return action, params, True
    else:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise SqsError("MalformedQueryString", "The body is not form data in UTF-8.") from None
        fields = dict(parse_qsl(text, keep_blank_values=True))
        fields.update(request.query_params)
        action, params = wire.parse_query(fields)
    wire.check_text(params)
    return action, params, False


def _error(error: SqsError, use_json: bool, request_id: str) -> Response:
    if use_json:
        body, headers = wire.json_error(error, request_id)
        return JSONResponse(
            body, status_code=error.status, headers=headers, media_type=wire.JSON_CONTENT_TYPE
        )
    return Response(
        wire.xml_error(error, request_id),
        status_code=error.status,
        headers={wire.REQUEST_ID_HEADER: request_id},
        media_type="text/xml",
    )


def _caller_identity(account: str, request_id: str) -> Response:
    result: dict[str, Any] = {
        "Arn": f"arn:aws:iam::{account}:user/deadletter",
        "UserId": "AIDADEADLETTER",
        "Account": account,
    }
    return Response(
        wire.xml_response("GetCallerIdentity", result, STS_NAMESPACE, request_id),
        headers={wire.REQUEST_ID_HEADER: request_id},
        media_type="text/xml",
    )
