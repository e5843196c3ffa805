"""The SQS face: `POST /` and `POST /<account>/<queue>` in either wire protocol, and the
query protocol over GET too (`GET /?Action=...`), as AWS takes it.

The account (the engine's project) is the access key id when that is a 12-digit account
number, as moto does, else the server's default account; the region comes from the SigV4
credential scope. Queue URLs are built from the request's own host.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from deadletter.api.auth import sqs_account
from deadletter.api.json_response import JSONResponse
from deadletter.api.notify import Notifier
from deadletter.api.options import AppOptions
from deadletter.api.sqs import wire
from deadletter.api.sqs.actions import ASYNC_ACTIONS, BOUNDED, SYNC_ACTIONS, Call
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
from deadletter.engine import Engine

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


def _identity(request: Request, options: AppOptions) -> tuple[str, str]:
    """(account, region) of a request, signed in its header or, presigned, in its query."""
    found = _CREDENTIAL.search(request.headers.get("authorization", "")) or _CREDENTIAL.search(
        f"Credential={request.query_params.get('X-Amz-Credential', '')},"
    )
    if not found:
        return options.default_project, options.region
    key, region = found.groups()
    return (key if names.ACCOUNT.valid(key) else options.default_project), region


def sqs_routes(
    engine: Engine, options: AppOptions, notifier: Notifier | None = None
) -> list[BaseRoute]:
    """The SQS face's routes; `notifier` wakes its long polls (one of their own if None)."""
    notifier = notifier or Notifier()
    engine.add_listener(notifier)

    async def endpoint(request: Request) -> Response:
        target = request.headers.get("x-amz-target", "")
        use_json = target.startswith(TARGET_PREFIX)
        request_id = wire.new_request_id()
        headers = {wire.REQUEST_ID_HEADER: request_id}
        try:
            action, params, clean = await _read(request, use_json)
            account, region = _identity(request, options)
            if "account" in request.path_params:
                account = request.path_params["account"]
            wire.check_text([account, request.path_params.get("queue", "")], "QueueUrl")
            if not names.PROJECT.valid(account):
                raise invalid_parameter(f"The queue URL's account is not {names.PROJECT.rule}.")
            project = account
            if options.authority is not None:
                body = await request.body()
                project, account, region = await run_in_threadpool(
                    sqs_account, options.authority, request, body, action
                )
            if action == "GetCallerIdentity" and options.test_mode and not use_json:
                return _caller_identity(account, request_id)
            region = _queue_region(params, request.path_params.get("region"), options.region) or (
                region
            )
            if not names.REGION.valid(region):
                raise SqsError(
                    "IncompleteSignature",
                    f"Credential should be scoped to a valid region, not '{region}'.",
                )
            project = regional(project, region, options.region)
            call = Call(
                engine=engine,
                notifier=notifier,
                params=params,
                project=project,
                account=account,
                region=region,
                request_base=lambda: str(request.base_url).rstrip("/"),
                path_queue=request.path_params.get("queue"),
                home_region=options.region,
                clean=clean,
            )
            check_parameters(action, params)
            if action in ASYNC_ACTIONS:
                result = await ASYNC_ACTIONS[action](call)
            elif action in BOUNDED:
                result = await on_loop(engine, SYNC_ACTIONS[action], call)
            elif action in SYNC_ACTIONS:
                result = await in_thread(SYNC_ACTIONS[action], call)
            else:
                raise SqsError(
                    "InvalidAction",
                    f"The action {action or '(none)'} is not valid for this web service.",
                )
            # Rendered inside the try: a result that cannot be written is a logged 500 too.
            if use_json:
                return JSONResponse(result, headers=headers, media_type=wire.JSON_CONTENT_TYPE)
            xml = wire.xml_response(action, result, request_id=request_id)
            return Response(xml, headers=headers, media_type="text/xml")
        except Exception as exc:
            error = from_exception(exc, f"{target or 'query'} {request.url.path}")
            return _error(error, use_json, request_id)

    async def reset(request: Request) -> Response:
        await run_in_threadpool(engine.wipe)
        return JSONResponse({"status": "ok"})

    routes: list[BaseRoute] = []
    for path in ("/", "/{account}/{queue}", "/{region}/{account}/{queue}"):
        routes += [QueryGet(path, endpoint), Route(path, endpoint, methods=["POST"])]
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
