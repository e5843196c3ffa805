"""The client's HTTP over the standard library's `http.client`: one keep-alive connection,
for the command line's few calls in a row. httpx costs a command more to import than the
whole of its work (docs/benchmarks.md, *Command start-up*); a client given a transport (the
tests' in-process app, a mock) still goes through httpx."""

from __future__ import annotations

import http.client
import json
import select
from dataclasses import dataclass
from email.message import Message
from typing import Any
from urllib.parse import urlencode, urlsplit

# What a request that no server answered raises: a refused or dropped connection, a timeout,
# a name that does not resolve (all OSError), or an answer that is not HTTP.
ERRORS = (OSError, http.client.HTTPException)


@dataclass(frozen=True)
class Response:
    """The parts of an answer the client reads, named as httpx names them."""

    status_code: int
    reason_phrase: str
    headers: Message
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


class Connection:
    """Requests to one base URL (its path, if any, prefixed to every request's), with the
    headers every request carries."""

    def __init__(self, base_url: str, headers: dict[str, str], timeout: float) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._headers = {"Accept": "application/json", **headers}
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        content: str | bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        target = self._prefix + path
        if params:
            target += ("&" if "?" in target else "?") + urlencode(params)
        sent = {**self._headers, **(headers or {})}
        body = content.encode() if isinstance(content, str) else content
        if json is not None:
            body = _json_bytes(json)
            sent.setdefault("Content-Type", "application/json")
        conn = self._connection()
        try:
            conn.request(method, target, body=body, headers=sent)
            answer = conn.getresponse()
            data = answer.read()
        except BaseException:
            self.close()  # half a request or answer: the next one starts afresh
            raise
        if answer.will_close:
            self.close()
        return Response(answer.status, answer.reason, answer.headers, data)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self) -> http.client.HTTPConnection:
        """The open connection, unless the server has closed it meanwhile (its keep-alive
        ran out: the socket reads as ready, at its end), in which case a new one."""
        conn = self._conn
        if conn is not None and conn.sock is not None:
            readable, _, _ = select.select([conn.sock], [], [], 0)
            if not readable:
                return conn
            self.close()
        if self._https:
            import ssl

            self._conn = http.client.HTTPSConnection(
                self._host, self._port, timeout=self._timeout, context=ssl.create_default_context()
            )
        else:
            self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        return self._conn


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
