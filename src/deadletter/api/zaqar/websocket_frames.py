"""Zaqar's WebSocket frames and the HTTP requests they stand for: each action of Zaqar v2's
WebSocket API as the route its HTTP API has for it (`ACTIONS`), a frame's body as that route's
request (`request_of`), and the route's answer as Zaqar's answer frame (`answer`, `reshaped`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from deadletter.api import strict_json
from deadletter.api.json_response import dumps
from deadletter.api.zaqar.errors import bad_request

Q = "/v2/queues/{queue_name}"


@dataclass(frozen=True)
class Act:
    """The HTTP route of one action: `query` maps body fields to query parameters, `body`
    names the fields sent as the JSON body, `whole` the field sent as the whole body."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    body: tuple[str, ...] = ()
    whole: str | None = None

    @property
    def in_path(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    @property
    def fields(self) -> set[str]:
        return {*self.in_path, *self.query, *self.body, *([self.whole] if self.whole else [])}


PAGE = {"marker": "marker", "limit": "limit"}
# Zaqar v2's actions (zaqar/api/v2/endpoints.py), each as the route its HTTP API has for it.
ACTIONS: dict[str, Act] = {
    "ping": Act("GET", "/v2/ping"),
    "get_node_health": Act("GET", "/v2/health"),
    "queue_list": Act("GET", "/v2/queues", {**PAGE, "detailed": "detailed"}),
    "queue_create": Act("PUT", Q, whole="metadata"),
    "queue_get": Act("GET", Q),
    "queue_get_stats": Act("GET", Q + "/stats"),
    "queue_delete": Act("DELETE", Q),
    "queue_purge": Act("POST", Q + "/purge", body=("resource_types",)),
    "message_list": Act(
        "GET",
        Q + "/messages",
        {
            **PAGE,
            "echo": "echo",
            "include_claimed": "include_claimed",
            "include_delayed": "include_delayed",
        },
    ),
    "message_get": Act("GET", Q + "/messages/{message_id}"),
    "message_get_many": Act("GET", Q + "/messages", {"message_ids": "ids"}),
    "message_post": Act("POST", Q + "/messages", body=("messages",)),
    "message_delete": Act("DELETE", Q + "/messages/{message_id}", {"claim_id": "claim_id"}),
    "message_delete_many": Act(
        "DELETE", Q + "/messages", {"message_ids": "ids", "pop": "pop", "claim_ids": "claim_ids"}
    ),
    "claim_create": Act("POST", Q + "/claims", {"limit": "limit"}, ("ttl", "grace")),
    "claim_get": Act("GET", Q + "/claims/{claim_id}"),
    "claim_update": Act("PATCH", Q + "/claims/{claim_id}", body=("ttl", "grace")),
    "claim_delete": Act("DELETE", Q + "/claims/{claim_id}"),
    "subscription_create": Act("POST", Q + "/subscriptions", body=("subscriber", "ttl", "options")),
    "subscription_list": Act("GET", Q + "/subscriptions", PAGE),
    "subscription_get": Act("GET", Q + "/subscriptions/{subscription_id}"),
    "subscription_delete": Act("DELETE", Q + "/subscriptions/{subscription_id}"),
}


def answer(frame: dict[str, Any], status: int, body: Any) -> dict[str, Any]:
    """Zaqar's answer frame; the request is echoed without its token."""
    headers = frame.get("headers")
    shown = {
        k: v
        for k, v in (headers.items() if isinstance(headers, dict) else ())
        if k.lower() != "x-auth-token"
    }
    request = {"action": frame.get("action"), "headers": shown, "body": frame.get("body", {})}
    return {"request": {**request, "api": "v2"}, "headers": {"status": status}, "body": body}


def error_body(title: str, description: str) -> dict[str, Any]:
    # python-zaqarclient raises with `error`; the HTTP face's own fields stay beside it.
    return {"title": title, "description": description, "error": description}


def _value(name: str, value: Any) -> str:
    """A body field as a query parameter's text (a list of ids joined with commas)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    raise bad_request(f"{name} must be a string, an integer or a boolean.")


@dataclass(frozen=True)
class Call:
    """One frame as the HTTP request of its action."""

    method: str
    path: str
    query: dict[str, str]
    body: bytes


def request_of(action: Act, doc: dict[str, Any]) -> Call:
    """The HTTP request of `action` with the frame's body `doc`; 400 for a field the action
    does not read, or a name that is not one path segment (it would reach another route)."""
    refused = strict_json.unknown_name(doc, action.fields, "field")
    if refused is not None:
        raise bad_request(refused)
    path = action.path
    for name in action.in_path:
        value = doc.get(name)
        if not isinstance(value, str) or not value:
            raise bad_request(f"{name} is required (a string).")
        if "/" in value:
            raise bad_request(f"{name} may not contain '/'.")
        path = path.replace("{" + name + "}", value)
    query = {
        param: _value(name, doc[name])
        for name, param in action.query.items()
        if doc.get(name) is not None
    }
    # Written as compactly as a client would (UTF-8, no spaces): the route's size limits apply.
    if action.whole is not None:
        body = dumps(doc.get(action.whole, {}))
    elif action.body:
        body = dumps({k: doc[k] for k in action.body if k in doc})
    else:
        body = b""
    return Call(action.method, path, query, body)


def reshaped(action: str, status: int, headers: dict[str, str], body: Any) -> Any:
    """The keys Zaqar's WebSocket API answers with where its HTTP API has others."""
    if status >= 400 and isinstance(body, dict) and "description" in body:
        return {**body, "error": body["description"]}
    if action == "message_post" and isinstance(body, dict):
        hrefs = body.get("resources", [])
        return {**body, "message_ids": [h.rsplit("/", 1)[-1] for h in hrefs]}
    if action == "claim_create" and "location" in headers:
        claim_id = headers["location"].rsplit("/", 1)[-1]
        return {"claim_id": claim_id, **(body if isinstance(body, dict) else {})}
    if action == "message_get" and status == 200:
        return {"messages": body}
    return body
