"""A small synchronous client of the native API (Zaqar v2 with the dead-letter extensions).

Its HTTP is its own, over a socket (client/wire.py), unless a client is given an httpx
transport (the tests' in-process app): a command that sends one message should not pay for an
HTTP stack larger than its work. Nothing server-side is imported either."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from deadletter.client import wire
from deadletter.client.auto_redrive import AutoRedriveCalls
from deadletter.client.groups import FailureGroupCalls
from deadletter.client.tags import TagCalls
from deadletter.client.wire import seg

if TYPE_CHECKING:
    import httpx

# Where `deadletter serve` listens unless told otherwise: config.py's DEFAULT_HOST and
# DEFAULT_PORT (not imported: the server's configuration is no concern of a client's;
# tests/cli/test_cli_startup.py keeps the two equal).
DEFAULT_URL = "http://127.0.0.1:8888"
DEFAULT_PROJECT = "123456789012"


class ApiError(Exception):
    """The server refused a request; `title` and `description` are its own words."""

    def __init__(self, status: int, title: str, description: str) -> None:
        super().__init__(f"{title}: {description}" if description else title)
        self.status = status
        self.title = title
        self.description = description


class QueueNotFound(ApiError):
    """The server has no queue of that name in the project; `queue` names it."""

    def __init__(self, status: int, title: str, description: str, queue: str) -> None:
        super().__init__(status, title, description)
        self.queue = queue


class Unreachable(Exception):
    """No server answered at the URL."""


class Client(FailureGroupCalls, AutoRedriveCalls, TagCalls):
    def __init__(
        self,
        url: str = DEFAULT_URL,
        project: str | None = DEFAULT_PROJECT,
        *,
        client_id: str | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        credential: tuple[str, str] | None = None,
    ) -> None:
        """`credential` (key id, secret) is sent as `X-Auth-Token: KEYID:SECRET` on every
        request, which a server with authentication required accepts as it accepts a token;
        a server with authentication off ignores it. A `project` of None sends no
        X-Project-ID: the server then takes the credential's project."""
        self.url = url.rstrip("/")
        headers = {"Client-ID": client_id or str(uuid.uuid4())}
        if project is not None:
            headers["X-Project-ID"] = project
        if credential is not None:
            headers["X-Auth-Token"] = f"{credential[0]}:{credential[1]}"
        self._http: wire.Connection | httpx.Client
        if transport is None:
            self._http = wire.Connection(self.url, headers, timeout)
        else:
            import httpx

            self._http = httpx.Client(
                base_url=self.url, headers=headers, transport=transport, timeout=timeout
            )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> wire.Response | httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except wire.ERRORS as exc:
            raise Unreachable(f"cannot reach the server at {self.url}: {exc}") from exc
        except Exception as exc:
            if isinstance(self._http, wire.Connection) or not _transport_error(exc):
                raise
            raise Unreachable(f"cannot reach the server at {self.url}: {exc}") from exc
        if response.status_code >= 400:
            try:
                doc = response.json()
                title, description = str(doc.get("title", "")), str(doc.get("description", ""))
            except (ValueError, AttributeError):
                raise self._not_the_api(response) from None
            hint = self._path_hint()
            if hint and description.startswith("There is no resource at "):  # a URL ending /v2
                description = description.rstrip(".") + hint
            if response.status_code == 404 and title == "Queue not found":
                raise QueueNotFound(404, title, description, _missing_queue(path, description))
            raise ApiError(response.status_code, title or response.reason_phrase, description)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._call(method, path, **kwargs)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise self._not_the_api(response) from None

    def _not_the_api(self, response: wire.Response | httpx.Response) -> ApiError:
        """An answer that is not the native API's JSON: the URL reaches some other page of
        the server (its console, the SQS face at a path) or another server. Said in a line,
        with the base URL to try when this one has a path, instead of the raw XML or HTML."""
        kind = response.headers.get("content-type", "no content type").split(";")[0]
        return ApiError(
            response.status_code,
            "Not the deadletter API",
            f"{self.url} answered {response.status_code} with {kind}, not the native API's"
            f" JSON{self._path_hint()}",
        )

    def _path_hint(self) -> str:
        """When the URL has a path: the server's base URL, which has none."""
        url = urlsplit(self.url)
        if url.path in ("", "/"):
            return ""
        return f"; the server's base URL has no path ({url.path}): {url.scheme}://{url.netloc}"

    # Queues

    def create_queue(self, name: str, metadata: dict[str, Any] | None = None) -> bool:
        """Whether the queue was created; False when it existed already (it is then left as
        it was, whatever `metadata` says: Zaqar's PUT)."""
        return self._call("PUT", f"/v2/queues/{seg(name)}", json=metadata or {}).status_code == 201

    def update_queue(self, name: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
        """Apply JSON-patch operations to the queue's metadata; the metadata after them."""
        doc: dict[str, Any] = self._json(
            "PATCH",
            f"/v2/queues/{seg(name)}",
            content=json.dumps(operations),
            headers={"Content-Type": "application/openstack-messaging-v2.0-json-patch"},
        )
        return doc

    def get_queue(self, name: str) -> dict[str, Any]:
        """The queue's metadata with every reserved key, its default where unset (a plain
        GET, as Zaqar's, leaves out the keys that hold their default)."""
        doc: dict[str, Any] = self._json(
            "GET", f"/v2/queues/{seg(name)}", params={"defaults": "true"}
        )
        return doc

    def list_queues(self) -> list[dict[str, Any]]:
        """Every queue with its metadata, across pages."""
        out: list[dict[str, Any]] = []
        params: dict[str, Any] = {"detailed": "true", "limit": 20}
        while True:
            doc = self._json("GET", "/v2/queues", params=params)
            page = doc.get("queues", []) if doc else []
            out += page
            if len(page) < 20:
                return out
            params["marker"] = page[-1]["name"]

    def delete_queue(self, name: str, force: bool = False) -> None:
        """Delete a queue; a DLQ that other queues name only with `force`."""
        params = {"force": "true"} if force else {}
        self._call("DELETE", f"/v2/queues/{seg(name)}", params=params)

    def stats(self, name: str) -> dict[str, Any]:
        doc: dict[str, Any] = self._json("GET", f"/v2/queues/{seg(name)}/stats")
        return doc

    # Messages

    def send(
        self, queue: str, bodies: list[Any], ttl: int | None = None, delay: int | None = None
    ) -> list[str]:
        extra = {k: v for k, v in (("ttl", ttl), ("delay", delay)) if v is not None}
        return self.send_messages(queue, [{"body": b, **extra} for b in bodies])

    def send_messages(self, queue: str, messages: list[dict[str, Any]]) -> list[str]:
        """Post messages in the wire's shape (body, ttl, delay, attributes); their ids."""
        doc = self._json("POST", f"/v2/queues/{seg(queue)}/messages", json={"messages": messages})
        return [str(href).rsplit("/", 1)[1] for href in doc["resources"]]

    def peek(self, queue: str, limit: int = 10, include_claimed: bool = False) -> list[Any]:
        doc = self._json(
            "GET",
            f"/v2/queues/{seg(queue)}/messages",
            params={
                "limit": limit,
                "include_claimed": str(include_claimed).lower(),
                "echo": "true",
            },
        )
        return list(doc["messages"]) if doc else []

    def claim(
        self, queue: str, limit: int = 1, ttl: int | None = None, tag: str | None = None
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """(claim id, messages); (None, []) when nothing was claimed. With `tag`, for that
        consumer tag of the queue."""
        body = {"ttl": ttl} if ttl is not None else {}
        params = {"limit": limit, **_tagged(tag)}
        response = self._call("POST", f"/v2/queues/{seg(queue)}/claims", params=params, json=body)
        if response.status_code == 204:
            return None, []
        claim_id = response.headers["Location"].rsplit("/", 1)[1]
        return claim_id, list(response.json()["messages"])

    def get_claim(self, queue: str, claim_id: str, tag: str | None = None) -> dict[str, Any]:
        """A live claim with its messages (404 once it expired or was released)."""
        doc: dict[str, Any] = self._json(
            "GET", f"/v2/queues/{seg(queue)}/claims/{seg(claim_id)}", params=_tagged(tag)
        )
        return doc

    def ack(self, queue: str, message_id: str, claim_id: str, tag: str | None = None) -> None:
        params = {"claim_id": claim_id, **_tagged(tag)}
        self._call("DELETE", f"/v2/queues/{seg(queue)}/messages/{seg(message_id)}", params=params)

    def release(
        self,
        queue: str,
        message_id: str,
        claim_id: str,
        *,
        delay: int | None = None,
        tag: str | None = None,
        requeue: bool = True,
    ) -> None:
        """A nack; without `requeue`, the message is dead-lettered at once or dropped."""
        self._call(
            "POST",
            f"/v2/queues/{seg(queue)}/messages/{seg(message_id)}/release",
            params={"claim_id": claim_id, **_tagged(tag)},
            json=({} if delay is None else {"delay": delay}) if requeue else {"requeue": False},
        )

    def dead_letter(
        self,
        queue: str,
        message_id: str,
        claim_id: str,
        *,
        description: str | None = None,
        error: str | dict[str, str] | None = None,
        tag: str | None = None,
    ) -> dict[str, Any]:
        """`error` is one text or an object of `class`, `message` and `stack`."""
        doc: dict[str, Any] = self._json(
            "POST",
            f"/v2/queues/{seg(queue)}/messages/{seg(message_id)}/dead_letter",
            params={"claim_id": claim_id, **_tagged(tag)},
            json={k: v for k, v in (("description", description), ("error", error)) if v},
        )
        return doc

    # Dead-letter queues

    def dead_letters(
        self, dlq: str, page_size: int = 100, **filters: Any
    ) -> Iterator[dict[str, Any]]:
        """Every dead letter matching `filters` (the API's filter names: source_queue,
        reason, error_class, attribute as a list, body ...), oldest first."""
        for page in self.dead_letter_pages(dlq, page_size, **filters):
            yield from page

    def dead_letter_pages(
        self, dlq: str, page_size: int = 100, **filters: Any
    ) -> Iterator[list[dict[str, Any]]]:
        """The pages of `dead_letters`, fetched one at a time as they are consumed: taking
        the first page of size one costs one request."""
        params: Any = [*_query(filters), ("limit", page_size)]
        path = f"/v2/queues/{seg(dlq)}/dead_letters"
        while True:
            doc = self._json("GET", path, params=params)
            messages: list[dict[str, Any]] = doc.get("messages", [])
            yield messages
            nxt = [link["href"] for link in doc.get("links", []) if link.get("rel") == "next"]
            if not nxt or not messages:
                return
            # The next link carries every parameter, the marker included.
            href = urlsplit(nxt[0])
            path, params = href.path, parse_qsl(href.query, keep_blank_values=True)

    def count_dead_letters(self, dlq: str, **filters: Any) -> int:
        """How many dead letters `filters` (the API's filter names) select now."""
        doc = self._json("GET", f"/v2/queues/{seg(dlq)}/dead_letters/count", params=_query(filters))
        return int(doc["count"])

    def purge_dead_letters(self, dlq: str, **filters: Any) -> int:
        """Delete the dead letters `filters` select; how many."""
        doc = self._json("DELETE", f"/v2/queues/{seg(dlq)}/dead_letters", params=_query(filters))
        return int(doc["purged"])

    def edit_dead_letter(
        self, dlq: str, message_id: str, patch: Any, *, kind: str = "merge", redrive: bool = False
    ) -> dict[str, Any]:
        """Patch a dead letter (`kind` merge: JSON Merge Patch; json: JSON Patch), and with
        `redrive` send it back; the answer: the message, and the redrive task if any."""
        media = "application/merge-patch+json" if kind == "merge" else "application/json-patch+json"
        doc: dict[str, Any] = self._json(
            "PATCH",
            f"/v2/queues/{seg(dlq)}/dead_letters/{seg(message_id)}",
            params={"redrive": "true"} if redrive else None,
            content=json.dumps(patch).encode(),
            headers={"Content-Type": media},
        )
        return doc

    def dead_letter_sources(self, dlq: str) -> list[dict[str, Any]]:
        doc = self._json("GET", f"/v2/queues/{seg(dlq)}/dead_letter_sources")
        return list(doc["sources"])

    def start_redrive(self, dlq: str, **options: Any) -> dict[str, Any]:
        doc: dict[str, Any] = self._json(
            "POST",
            f"/v2/queues/{seg(dlq)}/redrives",
            json={k: v for k, v in options.items() if v is not None},
        )
        return doc

    def redrives(self, dlq: str) -> list[dict[str, Any]]:
        doc = self._json("GET", f"/v2/queues/{seg(dlq)}/redrives")
        return list(doc["redrives"])

    def redrive(self, dlq: str, task_id: str) -> dict[str, Any]:
        doc: dict[str, Any] = self._json("GET", f"/v2/queues/{seg(dlq)}/redrives/{seg(task_id)}")
        return doc

    def cancel_redrive(self, dlq: str, task_id: str) -> dict[str, Any]:
        doc = self._json("DELETE", f"/v2/queues/{seg(dlq)}/redrives/{seg(task_id)}")
        return dict(doc) if doc else self.redrive(dlq, task_id)

    def resume_redrive(self, dlq: str, task_id: str) -> dict[str, Any]:
        doc: dict[str, Any] = self._json(
            "POST", f"/v2/queues/{seg(dlq)}/redrives/{seg(task_id)}/resume"
        )
        return doc

    # Failure patterns (written by the analysis, read by a redrive by pattern)

    def patterns(self, dlq: str) -> list[dict[str, Any]]:
        """The DLQ's stored patterns."""
        doc = self._json("GET", f"/v2/queues/{seg(dlq)}/patterns")
        return list(doc.get("patterns") or [])

    def split_pattern(
        self, dlq: str, pattern_id: str, *, position: int, dry_run: bool = False
    ) -> dict[str, Any]:
        """Replace a stored pattern by one per value its members hold at `position` (from 1),
        or with `dry_run` say what that would make: `{"pattern_id", "position", "patterns":
        [{"id", "template", "count", "value"}], "unread"}`."""
        body = {"position": position, **({"dry_run": True} if dry_run else {})}
        path = f"/v2/queues/{seg(dlq)}/patterns/{seg(pattern_id)}/split"
        doc: dict[str, Any] = self._json("POST", path, json=body)
        return doc

    def put_patterns(self, dlq: str, patterns: list[dict[str, Any]]) -> None:
        """Replace the DLQ's stored patterns, each with its message ids."""
        self._call("PUT", f"/v2/queues/{seg(dlq)}/patterns", json={"patterns": patterns})

    def merge_assignments(
        self, dlq: str, writer: str, batch: int, assignments: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """Merge one writer's batch of pattern assignments into the DLQ's stored patterns, in
        one server transaction; a batch the writer merged already writes nothing."""
        body = {"writer": writer, "batch": batch, "assignments": assignments}
        doc: dict[str, Any] = self._json(
            "POST", f"/v2/queues/{seg(dlq)}/patterns/assignments", json=body
        )
        return doc

    # Queue templates

    def put_template(self, name: str, doc: dict[str, Any]) -> dict[str, Any]:
        """Create the template, or replace it whole."""
        result: dict[str, Any] = self._json("PUT", f"/v2/templates/{seg(name)}", json=doc)
        return result

    def patch_template(self, name: str, changes: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._json("PATCH", f"/v2/templates/{seg(name)}", json=changes)
        return result

    def templates(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/v2/templates")["templates"])

    def template(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._json("GET", f"/v2/templates/{seg(name)}")
        return result

    def delete_template(self, name: str) -> None:
        self._call("DELETE", f"/v2/templates/{seg(name)}")

    # Credentials (the server must have authentication required)

    def create_credential(self, role: str, project: str | None = None) -> dict[str, Any]:
        body = {"role": role, **({"project": project} if project else {})}
        doc: dict[str, Any] = self._json("POST", "/v2/credentials", json=body)
        return doc

    def credentials(self, every_project: bool = False) -> list[dict[str, Any]]:
        params = {"all": "true"} if every_project else {}
        doc = self._json("GET", "/v2/credentials", params=params)
        return list(doc["credentials"])

    def rotate_credential(self, key_id: str) -> dict[str, Any]:
        doc: dict[str, Any] = self._json("POST", f"/v2/credentials/{seg(key_id)}/rotate")
        return doc

    def revoke_credential(self, key_id: str) -> dict[str, Any]:
        doc: dict[str, Any] = self._json("DELETE", f"/v2/credentials/{seg(key_id)}")
        return doc

    def token(self, key_id: str, secret: str, ttl: int = 3600) -> dict[str, Any]:
        """A Zaqar token for the credential: `{"token", "expires_at"}`."""
        body = {"key_id": key_id, "secret": secret, "ttl": ttl}
        doc: dict[str, Any] = self._json("POST", "/v2/auth/tokens", json=body)
        return doc


def _transport_error(exc: Exception) -> bool:
    """Whether httpx (a client given a transport) says no server answered."""
    import httpx

    return isinstance(exc, httpx.TransportError)


def _tagged(tag: str | None) -> dict[str, str]:
    """The `tag` selector of a claim or message operation, when there is one."""
    return {"tag": tag} if tag is not None else {}


# How the server names the queue it did not find (`engine.lookups.require_queue`).
_NOT_FOUND = re.compile(r"queue '([^']+)' does not exist")


def _missing_queue(path: str, description: str) -> str:
    """The queue a 404 is about: the one the server names, which is not always the one in
    the path (a redrive's destination, a policy's DLQ); else the path's."""
    named = _NOT_FOUND.search(description)
    if named:
        return named.group(1)
    return path.split("/")[3] if path.startswith("/v2/queues/") else ""


def _query(filters: dict[str, Any]) -> list[tuple[str, Any]]:
    """The dead-letter filter's query parameters: each given value, a list's each (the
    `attribute` filters). Only None is left out: an empty value goes to the server, which
    refuses it (dropped here, it would widen a purge to the whole DLQ)."""
    pairs: list[tuple[str, Any]] = []
    for key, value in filters.items():
        for one in value if isinstance(value, list | tuple) else [value]:
            if one is not None:
                pairs.append((key, one))
    return pairs
