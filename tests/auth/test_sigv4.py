"""SigV4 verification against requests signed by botocore itself, in both SQS protocols.

# Given a request botocore signed (its signer, or a real boto3 SQS client stopped just
# before sending), the verifier accepts it; changing any signed part, the secret or the
# clock makes it refuse with the code AWS gives.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode, urlsplit

import boto3
import botocore.auth
import pytest
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from deadletter.auth import errors
from deadletter.auth.sigv4 import SigV4Identity, canonical_path, verify

KEY_ID = "DLAKABCDEFGHIJKLMNOP"
SECRET = "x8Uq-3b0hJm1vM2Hc0b3qK7dYxQ1s9nVt2wXeRzA"
SIGNED_AT = dt.datetime(2030, 5, 17, 12, 30, 0)
NOW = SIGNED_AT.replace(tzinfo=dt.UTC).timestamp()
HOST = "localhost:9324"
QUEUE_URL = f"http://{HOST}/123456789012/orders"


@pytest.fixture(autouse=True)
def frozen_signing_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: SIGNED_AT)
    yield


@dataclass(frozen=True)
class Wire:
    """A request as the server receives it."""

    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str, value: str) -> Wire:
        kept = [(k, v) for k, v in self.headers if k.lower() != name.lower()]
        return replace(self, headers=[*kept, (name, value)])


def lookup(key_id: str) -> str | None:
    return SECRET if key_id == KEY_ID else None


def check(wire: Wire, now: float = NOW) -> SigV4Identity:
    return verify(wire.method, wire.path, wire.query, wire.headers, wire.body, lookup, now=now)


def _wire(request: Any) -> Wire:
    prepared = request.prepare() if isinstance(request, AWSRequest) else request
    parts = urlsplit(prepared.url)
    body = prepared.body or b""
    if isinstance(body, str):
        body = body.encode()
    headers = [(k, v.decode() if isinstance(v, bytes) else v) for k, v in prepared.headers.items()]
    if not any(k.lower() == "host" for k, _ in headers):
        headers.append(("Host", parts.netloc))
    return Wire(prepared.method, parts.path or "/", parts.query, headers, body)


def signed(request: AWSRequest, secret: str = SECRET, region: str = "us-east-1") -> Wire:
    SigV4Auth(Credentials(KEY_ID, secret), "sqs", region).add_auth(request)
    return _wire(request)


def presigned(request: AWSRequest, expires: int = 300) -> Wire:
    SigV4QueryAuth(Credentials(KEY_ID, SECRET), "sqs", "us-east-1", expires).add_auth(request)
    return _wire(request)


def json_request(action: str = "SendMessage", body: dict[str, Any] | None = None) -> AWSRequest:
    doc = body if body is not None else {"QueueUrl": QUEUE_URL, "MessageBody": "hello"}
    return AWSRequest(
        method="POST",
        url=f"http://{HOST}/",
        data=json.dumps(doc).encode(),
        headers={
            "X-Amz-Target": f"AmazonSQS.{action}",
            "Content-Type": "application/x-amz-json-1.0",
            "x-amzn-query-mode": "true",
        },
    )


FORM = {"Action": "SendMessage", "Version": "2012-11-05", "MessageBody": "a b+c/d~"}


def query_post() -> AWSRequest:
    return AWSRequest(
        method="POST",
        url=QUEUE_URL,
        data=urlencode(FORM).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
    )


def query_post_form() -> AWSRequest:
    """As botocore's query serializer hands it to a presigner: the form as a dict, which
    the presigner moves into the query string."""
    return AWSRequest(method="POST", url=QUEUE_URL, data=dict(FORM))


def query_get() -> AWSRequest:
    params = {"Action": "ListQueues", "Version": "2012-11-05", "QueueNamePrefix": "o r+d"}
    return AWSRequest(method="GET", url=f"http://{HOST}/", params=params)


class _Captured(Exception):
    pass


def boto3_request(method: str, **kwargs: Any) -> Wire:
    """The exact request a real boto3 SQS client would send, captured before sending."""
    client = boto3.client(
        "sqs",
        endpoint_url=f"http://{HOST}",
        region_name="eu-west-1",
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
    )
    seen: list[Any] = []

    def capture(request: Any, **_: Any) -> None:
        seen.append(request)
        raise _Captured

    client.meta.events.register("before-send.sqs.*", capture)
    with pytest.raises(_Captured):
        getattr(client, method)(**kwargs)
    return _wire(seen[0])


# Accepted


@pytest.mark.parametrize(
    "make", [json_request, query_post, query_get], ids=["json", "query-post", "query-get"]
)
def test_botocore_signed_requests_verify(make: Any) -> None:
    identity = check(signed(make()))
    assert identity == SigV4Identity(KEY_ID, "us-east-1", "sqs", NOW, presigned=False)


def test_a_real_boto3_client_json_request_verifies() -> None:
    wire = boto3_request("send_message", QueueUrl=QUEUE_URL, MessageBody="héllo wörld")
    assert ("X-Amz-Target", "AmazonSQS.SendMessage") in wire.headers
    assert check(wire).region == "eu-west-1"


def test_a_real_boto3_client_request_without_body_fields_verifies() -> None:
    assert check(boto3_request("list_queues")).key_id == KEY_ID


@pytest.mark.parametrize("make", [query_get, query_post_form], ids=["get", "post"])
def test_presigned_requests_verify(make: Any) -> None:
    wire = presigned(make())
    assert "X-Amz-Signature=" in wire.query
    assert not any(k.lower() == "authorization" for k, _ in wire.headers)
    assert check(wire).presigned


def test_presigned_url_verifies_until_it_expires() -> None:
    wire = presigned(query_get(), expires=300)
    assert check(wire, now=NOW + 300).presigned


def test_signed_content_sha256_header_verifies() -> None:
    request = json_request()
    request.headers["X-Amz-Content-SHA256"] = botocore.auth.sha256(request.body).hexdigest()
    assert check(signed(request)).key_id == KEY_ID


def test_skew_within_fifteen_minutes_is_accepted() -> None:
    wire = signed(json_request())
    assert check(wire, now=NOW + 15 * 60).key_id == KEY_ID
    assert check(wire, now=NOW - 15 * 60).key_id == KEY_ID


# Refused


def code_of(wire: Wire, now: float = NOW, secret_lookup: Any = lookup) -> tuple[str, int]:
    with pytest.raises(errors.SigV4Error) as caught:
        verify(wire.method, wire.path, wire.query, wire.headers, wire.body, secret_lookup, now=now)
    return caught.value.code, caught.value.status


def test_wrong_secret() -> None:
    assert code_of(signed(json_request(), secret="not-the-secret")) == (
        "SignatureDoesNotMatch",
        403,
    )


def test_unknown_key_id() -> None:
    assert code_of(signed(json_request()), secret_lookup=lambda _k: None) == (
        "InvalidClientTokenId",
        403,
    )


def test_altered_body() -> None:
    wire = signed(json_request())
    tampered = replace(wire, body=wire.body.replace(b"hello", b"jello"))
    assert code_of(tampered) == ("SignatureDoesNotMatch", 403)


def test_altered_form_body() -> None:
    wire = signed(query_post())
    tampered = replace(wire, body=wire.body.replace(b"SendMessage", b"DeleteQueue"))
    assert code_of(tampered)[0] == "SignatureDoesNotMatch"


def test_altered_signed_header() -> None:
    wire = signed(json_request())
    assert code_of(wire.header("X-Amz-Target", "AmazonSQS.DeleteQueue"))[0] == (
        "SignatureDoesNotMatch"
    )


def test_unsigned_amz_header_added_afterwards() -> None:
    wire = signed(json_request()).header("X-Amz-Meta-Extra", "1")
    assert code_of(wire)[0] == "SignatureDoesNotMatch"


def test_altered_path() -> None:
    wire = signed(query_post())
    assert code_of(replace(wire, path="/123456789012/payments"))[0] == "SignatureDoesNotMatch"


def test_altered_query() -> None:
    wire = signed(query_get())
    tampered = replace(wire, query=wire.query.replace("ListQueues", "DeleteQueue"))
    assert code_of(tampered)[0] == "SignatureDoesNotMatch"


def test_altered_presigned_query() -> None:
    wire = presigned(query_get())
    tampered = replace(wire, query=wire.query.replace("ListQueues", "DeleteQueue"))
    assert code_of(tampered)[0] == "SignatureDoesNotMatch"


def test_content_sha256_that_does_not_match_the_body() -> None:
    request = json_request()
    request.headers["X-Amz-Content-SHA256"] = "0" * 64
    assert code_of(signed(request))[0] == "SignatureDoesNotMatch"


def test_unsigned_payload_is_refused_unless_allowed() -> None:
    request = json_request()
    request.headers["X-Amz-Content-SHA256"] = "UNSIGNED-PAYLOAD"
    wire = signed(request)
    assert code_of(wire)[0] == "SignatureDoesNotMatch"
    identity = verify(
        wire.method, wire.path, wire.query, wire.headers, wire.body, lookup,
        now=NOW, allow_unsigned_payload=True,
    )  # fmt: skip
    assert identity.key_id == KEY_ID


def test_presigned_url_past_its_expiry() -> None:
    wire = presigned(query_get(), expires=300)
    assert code_of(wire, now=NOW + 301) == ("RequestExpired", 403)


def test_clock_skew_past() -> None:
    wire = signed(json_request())
    with pytest.raises(errors.SignatureDoesNotMatch, match=r"Signature expired: 20300517T123000Z"):
        check(wire, now=NOW + 15 * 60 + 1)


def test_clock_skew_future() -> None:
    wire = signed(json_request())
    with pytest.raises(errors.SignatureDoesNotMatch, match="Signature not yet current"):
        check(wire, now=NOW - 15 * 60 - 1)


def test_missing_authentication() -> None:
    wire = _wire(json_request())
    assert code_of(wire) == ("MissingAuthenticationToken", 403)


def test_malformed_authorization_header() -> None:
    wire = signed(json_request()).header("Authorization", "AWS4-HMAC-SHA256 Credential=x")
    assert code_of(wire) == ("IncompleteSignature", 400)


def test_credential_scoped_to_another_service() -> None:
    request = json_request()
    SigV4Auth(Credentials(KEY_ID, SECRET), "sns", "us-east-1").add_auth(request)
    assert code_of(_wire(request))[0] == "SignatureDoesNotMatch"


def test_signature_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import hmac

    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr("deadletter.auth.sigv4.hmac.compare_digest", spy)
    check(signed(json_request()))
    assert any(len(a) == 64 for a, _ in calls)


def test_canonical_path_matches_botocore() -> None:
    signer = SigV4Auth(Credentials(KEY_ID, SECRET), "sqs", "us-east-1")
    for path in ["/", "", "/a/./b/../c/", "//a//b", "/123/q%20x", "/~a/b-c_d.e"]:
        assert canonical_path(path) == signer._normalize_url_path(path), path


def _with_signature(wire: Wire, change: Any) -> Wire:
    """`wire` with its Authorization header's signature replaced by change(signature)."""
    header = dict((k.lower(), v) for k, v in wire.headers)["authorization"]
    head, _, signature = header.rpartition("Signature=")
    return wire.header("Authorization", head + "Signature=" + change(signature))


def _with_query_signature(wire: Wire, change: Any) -> Wire:
    pairs = [p.split("=", 1) for p in wire.query.split("&")]
    query = "&".join(f"{k}={change(v) if k == 'X-Amz-Signature' else v}" for k, v in pairs)
    return replace(wire, query=query)


# A prefix of the right signature (1, 8, 63 hex digits) or the right one with more after it
# (65): a comparison over only as many characters as were sent, or as are expected, passes
# one of them.
CUTS = [
    pytest.param(lambda s: s[:1], id="1"),
    pytest.param(lambda s: s[:8], id="8"),
    pytest.param(lambda s: s[:63], id="63"),
    pytest.param(lambda s: s + "0", id="65"),
    pytest.param(lambda s: s + s, id="128"),
    pytest.param(lambda s: "", id="0"),
]


@pytest.mark.parametrize("cut", CUTS)
def test_a_truncated_or_extended_signature_is_refused(cut: Any) -> None:
    wire = signed(json_request())
    check(wire)  # the whole signature verifies
    tampered = _with_signature(wire, cut)
    with pytest.raises(errors.SigV4Error):
        check(tampered)


@pytest.mark.parametrize("cut", CUTS)
def test_a_truncated_or_extended_presigned_signature_is_refused(cut: Any) -> None:
    wire = presigned(query_get())
    check(wire)
    with pytest.raises(errors.SigV4Error):
        check(_with_query_signature(wire, cut))
