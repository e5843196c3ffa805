"""Zaqar v2's WebSocket transport: JSON frames `{"action", "headers", "body"}` on the HTTP port.

Each frame is answered by the HTTP route Zaqar's action names: the frame becomes that route's
request (method, path, query, JSON body, the frame's headers) and goes through the app itself,
so authentication, roles, names, the body limit and the refusal of unknown fields are the HTTP
face's, written once (`context.endpoint`, each route's row). The answer is Zaqar's frame
`{"request", "headers": {"status"}, "body"}`, with the few body keys Zaqar's WebSocket API adds
(`message_ids`, `claim_id`, `error`). Frames are answered in order, one at a time.

python-zaqarclient's `ws://` transport connects to the URL it is given (Zaqar serves any path,
and so does this), sends `authenticate` with `X-Auth-Token` first and every parameter in the body.

`subscription_create` without a `subscriber` subscribes the socket itself, as in Zaqar: each
message sent to the queue from then on is pushed to it as a webhook receives it (`{"body",
"ttl", "queue_name", "Message_Type": "Notification"}`), until the subscription is deleted, its
`ttl` ends or the socket closes. Such a subscription lives with its socket, never in the
store: the socket lists the queue's new messages (through the listing route, with the
socket's token, so a revoked token stops it) whenever the queue announces some.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from starlette.routing import BaseRoute, WebSocketRoute
from starlette.types import Message
from starlette.websockets import WebSocket, WebSocketDisconnect

from deadletter.api import strict_json
from deadletter.api.auth import acting_project, token_credential
from deadletter.api.json_response import dumps
from deadletter.api.notify import Notifier, wait_for
from deadletter.api.threads import in_thread
from deadletter.api.zaqar.errors import ZaqarError, bad_request, response_for
from deadletter.api.zaqar.parse import PAGE_LIMIT
from deadletter.api.zaqar.websocket_frames import (
    ACTIONS,
    Call,
    answer,
    error_body,
    request_of,
    reshaped,
)
from deadletter.domain.limits import SUBSCRIPTIONS_PER_SOCKET
from deadletter.domain.projects import check_project
from deadletter.engine import Authority, Engine

log = logging.getLogger(__name__)

# Headers the transport sets on each request itself, whatever a frame says.
OWNED = frozenset({"host", "content-length", "content-type", "transfer-encoding", "connection"})
# The message fields Zaqar's WebSocket API answers with, unless a frame asks for others.
FORMAT = ("x-deadletter-format", "zaqar")
# Each of a socket's own subscriptions lists at most a page per announcement.
PUSH_PAGE = PAGE_LIMIT
# A subscription looks again this often without an announcement (a claim ending, a delay).
PUSH_IDLE = 30.0
BINARY = "Binary (MessagePack) frames are not accepted; send JSON text frames."


class Session:
    """One socket: its token once `authenticate` gave one, and the HTTP scope its frames'
    requests are made from."""

    def __init__(self, websocket: WebSocket, notifier: Notifier) -> None:
        self.ws = websocket
        self.notifier = notifier
        self.token: str | None = None
        app = websocket.scope["app"]
        self.app = app
        self.engine: Engine = app.state.engine
        self.default_project: str = app.state.options.default_project
        self.authority: Authority | None = app.state.options.authority
        self.sending = asyncio.Lock()
        self.pushes: dict[str, tuple[str, float, asyncio.Task[None]]] = {}

    async def send(self, frame: dict[str, Any]) -> None:
        async with self.sending:  # answers and pushes, one whole frame at a time
            await self.ws.send_text(dumps(frame).decode())

    def close(self) -> None:
        for _, _, task in self.pushes.values():
            task.cancel()
        self.pushes.clear()

    async def handle(self, text: str) -> dict[str, Any]:
        try:
            frame = strict_json.loads(text)
        except strict_json.InvalidJson as exc:
            return answer({}, 400, error_body("Malformed JSON", f"Can't decode the frame: {exc}."))
        if not isinstance(frame, dict):
            return answer({}, 400, error_body("Invalid API request", "A frame is a JSON object."))
        try:
            return await self._handle(frame)
        except Exception as exc:  # the HTTP face's table, as its routes answer it
            response = response_for(exc, f"websocket {frame.get('action')}")
            body = json.loads(bytes(response.body))
            return answer(frame, response.status_code, reshaped("", response.status_code, {}, body))

    async def _handle(self, frame: dict[str, Any]) -> dict[str, Any]:
        action = frame.get("action")
        headers = frame.get("headers", {})
        doc = frame.get("body", {})
        refused = strict_json.unknown_name(frame, ("action", "headers", "body"), "frame key")
        if refused is not None:
            raise bad_request(refused)
        if not isinstance(headers, dict):
            raise bad_request("headers must be a JSON object.")
        # python-zaqarclient sends `X-Project-ID: null` when it was given no project.
        headers = {k: v for k, v in headers.items() if v is not None}
        if not all(isinstance(v, str) for v in headers.values()):
            raise bad_request("Each header's value must be a string.")
        if not isinstance(doc, dict):
            raise bad_request("body must be a JSON object.")
        if action == "authenticate":
            return await self._authenticate(frame, headers)
        found = ACTIONS.get(action) if isinstance(action, str) else None
        if found is None:
            known = strict_json.unknown_name([str(action)], [*ACTIONS, "authenticate"], "action")
            raise bad_request(known or "Unknown action.")
        own = self._own(str(action), doc)
        if action == "subscription_create" and not doc.get("subscriber"):
            return await self._subscribe(frame, doc, headers)
        if own is not None:
            return self._socket_subscription(frame, str(action), own)
        status, answered, body = await self.dispatch(request_of(found, doc), headers)
        if action == "subscription_list" and status == 200 and isinstance(body, dict):
            queue = doc.get("queue_name")
            mine = [self._shown(k) for k, v in self.pushes.items() if v[0] == queue]
            body = {**body, "subscriptions": [*body.get("subscriptions", []), *mine]}
        return answer(frame, status, reshaped(str(action), status, answered, body))

    # The socket's own subscriptions

    def _own(self, action: str, doc: dict[str, Any]) -> str | None:
        """The id of this socket's subscription that a get or delete names, if it is one."""
        sid = doc.get("subscription_id")
        if action not in ("subscription_get", "subscription_delete") or not isinstance(sid, str):
            return None
        return sid if sid in self.pushes and doc.get("queue_name") == self.pushes[sid][0] else None

    def _shown(self, sid: str) -> dict[str, Any]:
        queue, until, _ = self.pushes[sid]
        loop = asyncio.get_running_loop()
        ttl = int(until - loop.time()) if until != float("inf") else None
        return {
            "id": sid,
            "source": queue,
            "subscriber": "websocket",
            "ttl": ttl,
            "options": {},
            "confirmed": True,
        }

    def _socket_subscription(self, frame: dict[str, Any], action: str, sid: str) -> dict[str, Any]:
        if action == "subscription_get":
            return answer(frame, 200, self._shown(sid))
        _, _, task = self.pushes.pop(sid)
        task.cancel()
        return answer(frame, 204, {})

    def _project(self, headers: dict[str, str]) -> str:
        """The project the socket's requests act in, as the HTTP face decides it."""
        named = headers.get("x-project-id")
        if self.authority is None:
            return check_project(named or self.default_project)
        return acting_project(token_credential(self.authority, headers), named)

    async def _subscribe(
        self, frame: dict[str, Any], doc: dict[str, Any], frame_headers: dict[str, str]
    ) -> dict[str, Any]:
        """Subscribe this socket to the queue: whoever may list its messages may listen."""
        refused = strict_json.unknown_name(doc, ("queue_name", "subscriber", "ttl"), "field")
        if refused is not None:
            raise bad_request(f"{refused} (options are a webhook's; this socket takes none)")
        ttl = doc.get("ttl")
        if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 1):
            raise bad_request("ttl must be a positive integer (seconds).")
        if len(self.pushes) >= SUBSCRIPTIONS_PER_SOCKET:
            raise bad_request(f"A socket holds at most {SUBSCRIPTIONS_PER_SOCKET} subscriptions.")
        headers = {k.lower(): v for k, v in frame_headers.items()}
        if self.token and "x-auth-token" not in headers:
            headers["x-auth-token"] = self.token
        probe = request_of(
            ACTIONS["message_list"], {"queue_name": doc.get("queue_name"), "limit": 1, "echo": True}
        )
        status, answered, body = await self.dispatch(probe, headers)
        if status >= 400:
            return answer(frame, status, reshaped("message_list", status, answered, body))
        queue = str(doc["queue_name"])
        project = await in_thread(self._project, headers)
        marker = await in_thread(self.engine.newest_seq, project, queue)
        sid = str(uuid.uuid4())
        loop = asyncio.get_running_loop()
        until = loop.time() + ttl if ttl is not None else float("inf")
        task = asyncio.ensure_future(self._push(sid, project, queue, headers, marker, until))
        self.pushes[sid] = (queue, until, task)
        return answer(
            frame, 201, {"subscription_id": sid, "message": f"Subscription {queue} created."}
        )

    async def _push(
        self,
        sid: str,
        project: str,
        queue: str,
        headers: dict[str, str],
        marker: int,
        until: float,
    ) -> None:
        """Push what `queue` gets after `marker` until `until` (the event loop's time)."""
        loop = asyncio.get_running_loop()
        query = {"limit": PUSH_PAGE, "echo": True, "include_claimed": True, "include_delayed": True}
        try:
            async with self.notifier.watching(project, queue) as event:
                # Deleted is gone from `pushes`: a cancel alone may be lost (asyncio.wait_for
                # before Python 3.12 drops one that arrives as its event is set).
                while loop.time() < until and sid in self.pushes:
                    doc = {"queue_name": queue, "marker": str(marker), **query}
                    call = request_of(ACTIONS["message_list"], doc)
                    status, _, body = await self.dispatch(call, headers)
                    if status >= 400:  # the token expired or was revoked, the role changed
                        return
                    found = body.get("messages", []) if isinstance(body, dict) else []
                    for m in found:
                        if sid not in self.pushes:
                            return
                        await self.send(notification(queue, m))
                    marker = _next_marker(body, marker)
                    if len(found) < PUSH_PAGE:
                        await wait_for(event, min(PUSH_IDLE, until - loop.time()))
        except (WebSocketDisconnect, OSError, RuntimeError):
            return  # the socket closed
        except Exception:
            log.exception("pushing to a subscribed socket failed; its subscription ends")
        finally:
            self.pushes.pop(sid, None)

    async def _authenticate(self, frame: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        """The token of every later frame that carries none, once it verifies."""
        lowered = {k.lower(): v for k, v in headers.items()}
        if self.authority is not None:
            try:
                await in_thread(token_credential, self.authority, lowered)
            except ZaqarError as exc:
                return answer(frame, exc.status, error_body(exc.title, "Authentication failed."))
        self.token = lowered.get("x-auth-token")
        return answer(frame, 200, {"message": "Authentified."})

    async def dispatch(
        self, call: Call, frame_headers: dict[str, str]
    ) -> tuple[int, dict[str, str], Any]:
        """`call` answered by the app as if it came over HTTP: (status, headers, JSON body)."""
        headers = {FORMAT[0]: FORMAT[1]}
        agent = self.ws.headers.get("user-agent")
        if agent:
            headers["user-agent"] = agent
        if self.token:
            headers["x-auth-token"] = self.token
        headers.update((k.lower(), v) for k, v in frame_headers.items() if k.lower() not in OWNED)
        headers["content-type"] = "application/json"
        headers["content-length"] = str(len(call.body))
        try:
            raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        except UnicodeEncodeError:
            raise bad_request("A header may hold only Latin-1 characters.") from None
        source = self.ws.scope
        scope = {
            "type": "http",
            "asgi": source.get("asgi", {"version": "3.0"}),
            "http_version": "1.1",
            "method": call.method,
            "scheme": "https" if source.get("scheme") == "wss" else "http",
            "path": call.path,
            "raw_path": quote(call.path).encode(),
            "root_path": source.get("root_path", ""),
            "query_string": urlencode(call.query).encode(),
            "headers": raw,
            "client": source.get("client"),
            "server": source.get("server"),
            "state": dict(source.get("state", {})),
            "extensions": {},
        }
        sent = False
        status = 500
        answered: dict[str, str] = {}
        chunks: list[bytes] = []

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": call.body, "more_body": False}
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                answered.update(
                    (k.decode("latin-1").lower(), v.decode("latin-1"))
                    for k, v in message.get("headers", [])
                )
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        try:
            await self.app(scope, receive, send)
        except Exception:
            # Starlette's outermost layer re-raises what it answered with a 500 (and logged).
            if status < 500:
                raise
        data = b"".join(chunks)
        try:
            body = json.loads(data) if data.strip() else {}
        except ValueError:
            body = {}
        return status, answered, body


def notification(queue: str, message: dict[str, Any]) -> dict[str, Any]:
    """What a webhook receives for `message` (`engine.notifier`), pushed to a socket."""
    return {
        "body": message.get("body"),
        "ttl": message.get("ttl"),
        "queue_name": queue,
        "Message_Type": "Notification",
    }


def _next_marker(body: Any, marker: int) -> int:
    """The marker of the listing's next page (its `links`), or `marker` when it had none."""
    for link in body.get("links", []) if isinstance(body, dict) else []:
        found = parse_qs(urlsplit(str(link.get("href", ""))).query).get("marker")
        if found and found[0].isdigit():
            return int(found[0])
    return marker


def websocket_routes(notifier: Notifier) -> list[BaseRoute]:
    """The transport's routes; `notifier` announces the messages a socket subscribed to."""

    async def serve(websocket: WebSocket) -> None:
        await websocket.accept()
        session = Session(websocket, notifier)
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                text = message.get("text")
                if text is None:  # Zaqar's MessagePack frames
                    frame = answer({}, 400, error_body("Invalid API request", BINARY))
                else:
                    frame = await session.handle(text)
                await session.send(frame)
        except (WebSocketDisconnect, OSError):
            return
        finally:
            session.close()

    # Every path, as Zaqar serves it: a client is given `ws://host:port` or a path of its own.
    return [WebSocketRoute("/{path:path}", serve)]
