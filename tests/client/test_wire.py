"""The client's HTTP/1.1 over a socket (client/wire.py), against servers that answer as
scripted, and through a proxy the environment names: the ways an answer is framed, a
keep-alive connection the server dropped, an answer that is not HTTP, and HTTP_PROXY,
HTTPS_PROXY and NO_PROXY as other HTTP clients read them."""

from __future__ import annotations

import contextlib
import datetime
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import pytest

from deadletter.client import Client, Unreachable
from deadletter.client.wire import Connection
from tests.support.descriptors import SELECT_LIMIT, descriptors_taken

Handler = Callable[[BinaryIO, socket.socket, "Listener"], None]


class Listener:
    """A TCP server on 127.0.0.1 in a thread: each connection goes to `handle`; what came in
    is kept in `seen` (request heads, one string each)."""

    def __init__(self, handle: Handler) -> None:
        self.handle = handle
        self.seen: list[str] = []
        self.connections = 0
        self.closed = threading.Semaphore(0)  # released as each connection ends
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            self.connections += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader, contextlib.suppress(OSError):
            self.handle(reader, conn, self)
        self.closed.release()

    def close(self) -> None:
        self.sock.close()


def read_request(reader: BinaryIO) -> tuple[str, bytes]:
    """A request's head (its lines, CRLF-joined) and body (by Content-Length)."""
    lines = []
    while (line := reader.readline().decode("latin-1").rstrip("\r\n")) != "":
        lines.append(line)
    length = next(
        (int(v) for n, _, v in (h.partition(":") for h in lines) if n.lower() == "content-length"),
        0,
    )
    return "\r\n".join(lines), reader.read(length)


def answering(*answers: bytes, then_close: bool = False) -> Handler:
    """A server that answers each request on a connection with the next of `answers`."""
    queue = list(answers)

    def handle(reader: BinaryIO, conn: socket.socket, listener: Listener) -> None:
        while queue:
            head, _ = read_request(reader)
            if not head:
                return
            listener.seen.append(head)
            conn.sendall(queue.pop(0))
            if then_close or "\r\nConnection: close" in head:
                return

    return handle


@pytest.fixture
def listen() -> Iterator[Callable[[Handler], Listener]]:
    made: list[Listener] = []

    def make(handle: Handler) -> Listener:
        made.append(Listener(handle))
        return made[-1]

    yield make
    for listener in made:
        listener.close()


@pytest.fixture
def connect() -> Iterator[Callable[..., Connection]]:
    """Connections to a base URL, closed when the test ends."""
    made: list[Connection] = []

    def make(url: str, headers: dict[str, str] | None = None) -> Connection:
        made.append(Connection(url, headers or {}, timeout=5))
        return made[-1]

    yield make
    for conn in made:
        conn.close()


@pytest.fixture(autouse=True)
def no_proxy_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


JSON_OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n{"a": 1}'
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'3\r\n{"a\r\n5;ext=1\r\n": 2}\r\n0\r\nTrailer: x\r\n\r\n'
)
TO_THE_END = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[1, 2, 3]"


def test_an_answer_framed_by_length_by_chunks_or_by_the_end(
    listen: Callable[..., Listener], connect: Callable[..., Connection]
) -> None:
    server = listen(answering(JSON_OK, CHUNKED, TO_THE_END))
    conn = connect(server.url + "/base/", {"Client-ID": "c"})
    first = conn.request("GET", "/v2/x", params={"q": "a b"})
    assert (first.status_code, first.reason_phrase, first.json()) == (200, "OK", {"a": 1})
    assert first.headers["content-type"] == first.headers.get("Content-Type") == "application/json"
    assert conn.request("POST", "/v2/y", json={"b": "é"}).json() == {"a": 2}
    assert conn.request("DELETE", "/v2/z").json() == [1, 2, 3]
    # One connection for the three: kept alive until the third answer ran to its end.
    assert server.connections == 1
    get, post, delete = server.seen
    assert get.startswith("GET /base/v2/x?q=a+b HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{server.port}" in get and "Client-ID: c" in get
    assert "Content-Type: application/json" in post and "Content-Length: 10" in post
    assert "Content-Length" not in delete


def test_a_connection_the_server_closed_is_opened_again(
    listen: Callable[..., Listener], connect: Callable[..., Connection]
) -> None:
    # Given a server that closes each connection after one answer, as a keep-alive running out
    server = listen(answering(JSON_OK, JSON_OK, then_close=True))
    conn = connect(server.url)
    assert conn.request("GET", "/one").json() == {"a": 1}
    assert server.closed.acquire(timeout=5)
    # When a second request is made, it goes on a new connection, not the closed one
    assert conn.request("GET", "/two").json() == {"a": 1}
    assert server.connections == 2


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"",
    ],
    ids=["not http", "short body", "bad chunk", "nothing"],
)
def test_an_answer_that_is_not_http_is_no_server(
    listen: Callable[..., Listener], answer: bytes
) -> None:
    server = listen(answering(answer, then_close=True))
    with Client(server.url) as client, pytest.raises(Unreachable, match="cannot reach"):
        client.get_queue("orders")


def forward_proxy(reader: BinaryIO, conn: socket.socket, listener: Listener) -> None:
    """An HTTP proxy: an absolute-form request is sent on to its origin (one per
    connection); a CONNECT is refused, as a proxy that wants a password refuses it."""
    head, body = read_request(reader)
    listener.seen.append(head)
    method, target, _ = head.split("\r\n")[0].split(" ")
    if method == "CONNECT":
        conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
        return
    assert target.startswith("http://")
    authority, _, path = target[len("http://") :].partition("/")
    host, _, port = authority.partition(":")
    headers = [
        h for h in head.split("\r\n")[1:] if not h.lower().startswith(("connection", "proxy-"))
    ]
    request = "\r\n".join([f"{method} /{path} HTTP/1.1", *headers, "Connection: close", "", ""])
    with socket.create_connection((host, int(port))) as origin:
        origin.sendall(request.encode("latin-1") + body)
        while data := origin.recv(65536):
            conn.sendall(data)


def test_requests_go_through_the_proxy_the_environment_names(
    listen: Callable[..., Listener],
    connect: Callable[..., Connection],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    origin = listen(answering(JSON_OK, JSON_OK))
    proxy = listen(forward_proxy)
    monkeypatch.setenv("HTTP_PROXY", f"http://user:p%40ss@127.0.0.1:{proxy.port}")
    conn = connect(origin.url)
    assert conn.request("GET", "/v2/queues", params={"limit": 2}).json() == {"a": 1}
    (seen,) = proxy.seen
    assert seen.startswith(f"GET http://127.0.0.1:{origin.port}/v2/queues?limit=2 HTTP/1.1")
    assert "Proxy-Authorization: Basic dXNlcjpwQHNz" in seen  # user:p@ss
    assert origin.seen[0].startswith("GET /v2/queues?limit=2 ")


def test_no_proxy_names_the_hosts_reached_directly(
    listen: Callable[..., Listener],
    connect: Callable[..., Connection],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    origin = listen(answering(JSON_OK))
    proxy = listen(forward_proxy)
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    assert connect(origin.url).request("GET", "/x").json() == {"a": 1}
    assert proxy.seen == [] and len(origin.seen) == 1


def test_https_goes_through_the_proxy_in_a_tunnel(
    listen: Callable[..., Listener], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an HTTPS proxy that refuses tunnels, the client asks it for one, and says it
    # was refused.
    proxy = listen(forward_proxy)
    monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{proxy.port}")
    with (
        Client("https://queues.example:8443") as client,
        pytest.raises(Unreachable, match=r"proxy refused a tunnel to queues\.example:8443: 407"),
    ):
        client.get_queue("orders")
    (seen,) = proxy.seen
    assert seen.startswith("CONNECT queues.example:8443 HTTP/1.1\r\nHost: queues.example:8443")


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for `localhost` and its key, as files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def tunnelling_proxy(reader: BinaryIO, conn: socket.socket, listener: Listener) -> None:
    """A proxy that opens the tunnel a CONNECT asks for and relays bytes both ways."""
    head, _ = read_request(reader)
    listener.seen.append(head)
    host, _, port = head.split("\r\n")[0].split(" ")[1].partition(":")
    with socket.create_connection(("127.0.0.1" if host == "localhost" else host, int(port))) as far:
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

        def back() -> None:
            with contextlib.suppress(OSError):
                while data := far.recv(65536):
                    conn.sendall(data)

        relay = threading.Thread(target=back, daemon=True)
        relay.start()
        with contextlib.suppress(OSError):
            while data := conn.recv(65536):
                far.sendall(data)
        relay.join(timeout=5)


def test_https_reaches_the_server_through_the_proxys_tunnel(
    listen: Callable[..., Listener],
    connect: Callable[..., Connection],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # Given a TLS server whose certificate the client trusts, behind a proxy that tunnels
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    plain = answering(JSON_OK)

    def tls(_: BinaryIO, conn: socket.socket, listener: Listener) -> None:
        with context.wrap_socket(conn, server_side=True) as wrapped, wrapped.makefile("rb") as r:
            plain(r, wrapped, listener)

    origin = listen(tls)
    proxy = listen(tunnelling_proxy)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    # When the client asks the server for a page
    answer = connect(f"https://localhost:{origin.port}").request("GET", "/v2/queues")
    # Then it went through the tunnel, and TLS inside it
    assert answer.json() == {"a": 1}
    assert proxy.seen[0].startswith(f"CONNECT localhost:{origin.port} HTTP/1.1")
    assert origin.seen[0].startswith("GET /v2/queues HTTP/1.1")


def test_a_kept_alive_connection_numbered_past_1023_is_reused_and_opened_again(
    listen: Callable[..., Listener], connect: Callable[..., Connection]
) -> None:
    # Given a program holding a thousand descriptors, and a server that closes each
    # connection after two answers
    def two_then_close(reader: BinaryIO, conn: socket.socket, listener: Listener) -> None:
        for _ in range(2):
            head, _ = read_request(reader)
            if not head:
                return
            listener.seen.append(head)
            conn.sendall(JSON_OK)

    server = listen(two_then_close)
    with descriptors_taken():
        conn = connect(server.url)
        # When the client asks twice, then once more after the server closed
        assert conn.request("GET", "/one").json() == {"a": 1}
        assert conn._sock is not None and conn._sock.fileno() >= SELECT_LIMIT
        assert conn.request("GET", "/two").json() == {"a": 1}
        assert server.closed.acquire(timeout=5)
        assert conn.request("GET", "/three").json() == {"a": 1}
    # I expect the first connection kept for the second request, a new one for the third
    assert server.connections == 2
