"""The client's HTTP/1.1, written over a socket: one keep-alive connection for the command
line's few calls in a row, through the proxy the environment names. httpx costs a command
more to import than the whole of its work, and the standard library's `http.client` brings
the `email` package along for its headers (docs/benchmarks.md, *Command start-up*); a client
given a transport (the tests' in-process app, a mock) still goes through httpx.

What it reads of an answer is what the native API sends: a status line, headers, and a body
framed by Content-Length, by chunks, or by the connection's end."""

from __future__ import annotations

import json
import os
import select
import socket
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol
from urllib.parse import quote, unquote, urlencode, urlsplit

MAX_LINE = 65536  # a status or header line longer than this is no answer of the API's
MAX_HEADERS = 100
BODYLESS = frozenset({204, 304})
ENCLOSING = frozenset({"POST", "PUT", "PATCH"})  # say Content-Length: 0 when they send none


class LineReader(Protocol):
    """What reading a head takes: a file over a socket, buffered or not."""

    def readline(self, size: int = -1, /) -> bytes: ...


class ProtocolError(Exception):
    """The answer is not HTTP/1.1 as the native API speaks it (or a proxy refused the way)."""


# What a request that no server answered raises: a refused or dropped connection, a timeout,
# a name that does not resolve (all OSError), or an answer that is not HTTP.
ERRORS = (OSError, ProtocolError)


class Headers:
    """An answer's headers by case-blind name (the last of a repeated one)."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._by_name = {name.lower(): value for name, value in pairs}

    def get(self, name: str, default: str = "") -> str:
        return self._by_name.get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self._by_name[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._by_name


@dataclass(frozen=True)
class Response:
    """The parts of an answer the client reads, named as httpx names them."""

    status_code: int
    reason_phrase: str
    headers: Headers
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


@dataclass(frozen=True)
class Proxy:
    """An HTTP proxy: its address, and the Proxy-Authorization its URL's user gives."""

    host: str
    port: int
    authorization: str | None


class Connection:
    """Requests to one base URL (its path, if any, prefixed to every request's), with the
    headers every request carries."""

    def __init__(self, base_url: str, headers: dict[str, str], timeout: float) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._authority = parts.netloc.rpartition("@")[2]
        self._prefix = parts.path.rstrip("/")
        self._headers = {"Accept": "application/json", **headers}
        self._timeout = timeout
        self._proxy: Proxy | None = None  # read from the environment at the first request
        self._proxy_read = False
        self._sock: socket.socket | None = None
        self._reader: BinaryIO | None = None

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Any = None,
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
        try:
            sock, reader = self._connection()
            sock.sendall(self._head(method, target, sent, body) + (body or b""))
            status, reason, answer, will_close = read_head(reader)
            data = read_body(reader, answer, bodyless=method == "HEAD" or status in BODYLESS)
        except BaseException:
            self.close()  # half a request or answer: the next one starts afresh
            raise
        if will_close or data is None:
            self.close()
        return Response(status, reason, answer, data or b"")

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _head(self, method: str, target: str, headers: dict[str, str], body: bytes | None) -> bytes:
        proxied = self._proxy is not None and not self._https
        if proxied:  # the absolute form a proxy reads (RFC 9112, 3.2.2)
            target = f"http://{self._authority}{target}"
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._authority}"]
        lines += ["Accept-Encoding: identity", "Connection: keep-alive"]
        if proxied and self._proxy is not None and self._proxy.authorization:
            lines.append(f"Proxy-Authorization: {self._proxy.authorization}")
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body is not None or method in ENCLOSING:
            lines.append(f"Content-Length: {len(body or b'')}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _connection(self) -> tuple[socket.socket, BinaryIO]:
        """The open connection, unless the server has closed it meanwhile (its keep-alive
        ran out: the socket reads as ready, at its end), in which case a new one."""
        if self._sock is not None and self._reader is not None:
            # `poll`, not `select`, which refuses a descriptor numbered 1,024 or more (a
            # program of many connections using this client gets one)
            poller = select.poll()
            poller.register(self._sock, select.POLLIN)
            if not poller.poll(0):
                return self._sock, self._reader
            self.close()
        if not self._proxy_read:
            self._proxy = proxy_for("https" if self._https else "http", self._host, self._port)
            self._proxy_read = True
        proxy = self._proxy
        host, port = (proxy.host, proxy.port) if proxy else (self._host, self._port)
        # An ASCII name as bytes: a str would be encoded by the `idna` codec, one more import.
        name: Any = host.encode("ascii") if host.isascii() else host
        sock = socket.create_connection((name, port), timeout=self._timeout)
        try:
            if self._https:
                if proxy is not None:
                    tunnel(sock, self._authority, proxy.authorization)
                import ssl

                context = ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=self._host)
        except BaseException:
            sock.close()
            raise
        self._sock, self._reader = sock, sock.makefile("rb")
        return self._sock, self._reader


def tunnel(sock: socket.socket, authority: str, authorization: str | None) -> None:
    """Ask the proxy on `sock` for a tunnel to `authority` (CONNECT); refused, an error."""
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if authorization:
        lines.append(f"Proxy-Authorization: {authorization}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    # Read byte by byte: what follows the proxy's answer is the server's, for TLS to read.
    with sock.makefile("rb", buffering=0) as reader:
        status, reason, _, _ = read_head(reader)
    if not 200 <= status < 300:
        raise ProtocolError(f"the proxy refused a tunnel to {authority}: {status} {reason}")


def read_head(reader: LineReader) -> tuple[int, str, Headers, bool]:
    """The status, reason, headers and whether the server closes the connection after the
    answer, skipping any interim (1xx) answer."""
    while True:
        line = _line(reader)
        version, _, rest = line.partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise ProtocolError(f"not an HTTP/1.1 answer: {line[:80]!r}")
        pairs: list[tuple[str, str]] = []
        while header := _line(reader):
            if len(pairs) == MAX_HEADERS:
                raise ProtocolError("an answer with too many headers")
            name, colon, value = header.partition(":")
            if not colon:
                raise ProtocolError(f"a header without a colon: {header[:80]!r}")
            pairs.append((name.strip(), value.strip()))
        if not 100 <= int(code) < 200:
            break
    headers = Headers(pairs)
    connection = headers.get("connection").lower()
    closes = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
    return int(code), reason, headers, closes


def read_body(reader: BinaryIO, headers: Headers, *, bodyless: bool) -> bytes | None:
    """The answer's body; None when it ran to the connection's end (which then is closed)."""
    if bodyless:
        return b""
    if "chunked" in headers.get("transfer-encoding").lower():
        return _chunks(reader)
    if "content-length" not in headers:
        return reader.read()  # framed by the connection's end
    length = headers["content-length"]
    if not length.isdigit():
        raise ProtocolError(f"a Content-Length that is no length: {length[:20]!r}")
    return _exactly(reader, int(length))


def _chunks(reader: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        size = _line(reader).partition(";")[0].strip()
        try:
            n = int(size, 16)
        except ValueError:
            raise ProtocolError(f"a chunk size that is no number: {size[:20]!r}") from None
        if n == 0:
            while _line(reader):  # trailers, unread
                pass
            return b"".join(parts)
        parts.append(_exactly(reader, n))
        _line(reader)


def _exactly(reader: BinaryIO, n: int) -> bytes:
    data = reader.read(n)
    if len(data) != n:
        raise ProtocolError(f"the answer ended {n - len(data)} bytes short")
    return data


def _line(reader: LineReader) -> str:
    raw = reader.readline(MAX_LINE + 1)
    if not raw:
        raise ProtocolError("the server closed the connection without answering")
    if len(raw) > MAX_LINE:
        raise ProtocolError("an answer's line is too long")
    return raw.decode("latin-1").rstrip("\r\n")


def proxy_for(scheme: str, host: str, port: int) -> Proxy | None:
    """The proxy the environment names for `scheme` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, as
    urllib reads them), unless NO_PROXY names the host. urllib.request is imported only when
    some *_proxy variable is set: it costs a command as much as the rest of its HTTP."""
    if not any(name.lower().endswith("_proxy") for name in os.environ):
        return None
    import urllib.request

    proxies = urllib.request.getproxies_environment()
    url = proxies.get(scheme) or proxies.get("all")
    # proxy_bypass_environment: NO_PROXY as urllib reads it (public, though typeshed omits it)
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if not url or bypass(f"{host}:{port}", proxies):
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme != "http" or not parts.hostname:
        raise ProtocolError(f"{url}: only an http:// proxy is supported")
    authorization = None
    if parts.username is not None:
        import base64

        user = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(user.encode()).decode("ascii")
    return Proxy(parts.hostname, parts.port or 80, authorization)


def seg(value: object) -> str:
    """`value` as one path segment: every character but the unreserved ones escaped, so a
    name with a blank, `?`, `#`, `/` or `%` in it is the name the server reads (and refuses
    or takes) rather than another request; `.` and `..` escaped too, which a proxy would
    otherwise fold into the path before them."""
    text = quote(str(value), safe="")
    return text.replace(".", "%2E") if text in {".", ".."} else text


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
