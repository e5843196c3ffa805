"""Zaqar pre-signed URLs: Zaqar's signature, and python-zaqarclient's headers verify.

# The expected signature below is computed independently, the way zaqar/common/urls.py
# does it (a raw-string format, so the separators are a literal backslash and `n`).
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

import pytest
from zaqarclient.transport.request import prepare_request

from deadletter.auth.errors import SignedUrlRefused
from deadletter.auth.signed_urls import create_signed_url, share, verify_signed_request

KEY = b"server-url-key"
NOW = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()
EXPIRES = "2030-01-02T12:00:00"
MESSAGES = "/v2/queues/orders/messages"


def zaqar_signature(paths: list[str], methods: list[str], project: str, expires: str) -> str:
    body = r"{paths}\n{methods}\n{project}\n{expires}".format(
        paths=",".join(sorted(paths)),
        methods=",".join(sorted(methods)),
        project=project,
        expires=expires,
    )
    return hmac.new(KEY, body.encode(), hashlib.sha256).hexdigest()


def client_headers(doc: dict[str, object]) -> dict[str, str]:
    """The headers python-zaqarclient's `signed-url` auth backend sends for a share."""
    opts = {
        "paths": doc["paths"],
        "expires": doc["expires"],
        "methods": doc["methods"],
        "signature": doc["signature"],
        "os_project_id": doc["project"],
    }
    request = prepare_request(auth_opts={"backend": "signed-url", "options": opts})
    return dict(request.headers)


def test_the_signature_is_zaqars() -> None:
    signed = create_signed_url(
        KEY, paths=[MESSAGES], project="p1", now=NOW, methods=["POST", "GET"], expires=EXPIRES
    )
    assert signed.methods == ["GET", "POST"]
    assert signed.signature == zaqar_signature([MESSAGES], ["GET", "POST"], "p1", EXPIRES)


def test_expires_is_normalised_to_utc_and_defaults_to_a_day() -> None:
    signed = create_signed_url(
        KEY, paths=[MESSAGES], project="p1", now=NOW, expires="2030-01-02T14:00:00+02:00"
    )
    assert signed.expires == EXPIRES
    assert create_signed_url(KEY, paths=[MESSAGES], project="p1", now=NOW).expires == EXPIRES


@pytest.mark.parametrize("expires", ["1893585600", "2029-12-31T00:00:00"])
def test_integer_or_past_expiry_is_refused_as_zaqar_does(expires: str) -> None:
    with pytest.raises(ValueError):
        create_signed_url(KEY, paths=[MESSAGES], project="p1", now=NOW, expires=expires)


def test_share_builds_queue_paths_and_refuses_unknown_ones() -> None:
    signed = share(KEY, project="p1", queue="orders", now=NOW, names=["claims", "messages"])
    assert signed.paths == ["/v2/queues/orders/claims", MESSAGES]
    with pytest.raises(ValueError):
        share(KEY, project="p1", queue="orders", now=NOW, names=["subscriptions"])


def test_zaqarclient_headers_verify() -> None:
    doc = share(
        KEY, project="p1", queue="orders", now=NOW, methods=["GET", "POST"], expires=EXPIRES
    ).as_json()
    headers = client_headers(doc)
    assert "URL-Signature" in headers and headers["X-Project-Id"] == "p1"
    grant = verify_signed_request(KEY, method="GET", path=MESSAGES, headers=headers, now=NOW)
    assert grant.project == "p1"
    assert (
        verify_signed_request(
            KEY, method="GET", path=MESSAGES + "/abc123", headers=headers, now=NOW
        ).project
        == "p1"
    )


@pytest.fixture
def headers() -> dict[str, str]:
    return client_headers(
        share(KEY, project="p1", queue="orders", now=NOW, expires=EXPIRES).as_json()
    )


def test_another_method_is_refused(headers: dict[str, str]) -> None:
    with pytest.raises(SignedUrlRefused):
        verify_signed_request(KEY, method="DELETE", path=MESSAGES, headers=headers, now=NOW)


@pytest.mark.parametrize(
    "path", ["/v2/queues/payments/messages", "/v2/queues/orders/claims", MESSAGES + "x"]
)
def test_another_path_is_refused(headers: dict[str, str], path: str) -> None:
    with pytest.raises(SignedUrlRefused):
        verify_signed_request(KEY, method="GET", path=path, headers=headers, now=NOW)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("X-Project-Id", "p2"),
        ("URL-Methods", "GET,DELETE"),
        ("URL-Paths", "/v2/queues/orders"),
        ("URL-Expires", "2031-01-01T00:00:00"),
        ("URL-Signature", "0" * 64),
    ],
)
def test_an_altered_header_is_refused(headers: dict[str, str], name: str, value: str) -> None:
    headers[name] = value
    with pytest.raises(SignedUrlRefused):
        verify_signed_request(
            KEY, method="GET", path="/v2/queues/orders/messages", headers=headers, now=NOW
        )


def test_another_key_is_refused(headers: dict[str, str]) -> None:
    with pytest.raises(SignedUrlRefused):
        verify_signed_request(b"other", method="GET", path=MESSAGES, headers=headers, now=NOW)


def test_an_expired_url_is_refused(headers: dict[str, str]) -> None:
    later = datetime(2030, 1, 2, 12, 0, 0, tzinfo=UTC).timestamp()
    with pytest.raises(SignedUrlRefused):
        verify_signed_request(KEY, method="GET", path=MESSAGES, headers=headers, now=later)


def test_missing_headers_are_refused() -> None:
    with pytest.raises(SignedUrlRefused):
        verify_signed_request(
            KEY, method="GET", path=MESSAGES, headers={"URL-Signature": "x"}, now=NOW
        )


WEEK = 7 * 24 * 3600


def test_expires_is_bounded_by_the_maximum_lifetime() -> None:
    """`9999-12-31` was once accepted: a URL nobody can revoke, valid forever."""
    for far in ["9999-12-31", "2030-01-08T12:00:01", "2031-01-01T00:00:00"]:
        with pytest.raises(ValueError, match="at most 604800 seconds"):
            create_signed_url(KEY, paths=[MESSAGES], project="p1", now=NOW, expires=far)
    assert create_signed_url(
        KEY, paths=[MESSAGES], project="p1", now=NOW, expires="2030-01-08T12:00:00"
    )
    with pytest.raises(ValueError, match="at most 3600 seconds"):
        share(KEY, project="p1", queue="orders", now=NOW, expires=EXPIRES, max_ttl=3600)
    # The default lifetime (a day) never passes a shorter limit.
    short = create_signed_url(KEY, paths=[MESSAGES], project="p1", now=NOW, max_ttl=600)
    assert short.expires == "2030-01-01T12:10:00"


def test_a_url_longer_than_the_limit_is_refused_when_used() -> None:
    """Lowering the limit ends the URLs issued under a higher one."""
    doc = create_signed_url(
        KEY, paths=[MESSAGES], project="p1", now=NOW, methods=["GET"], expires="2030-01-05T12:00:00"
    )
    headers = client_headers(doc.as_json())
    assert verify_signed_request(
        KEY, method="GET", path=MESSAGES, headers=headers, now=NOW, max_ttl=WEEK
    )
    with pytest.raises(SignedUrlRefused, match="longer than"):
        verify_signed_request(
            KEY, method="GET", path=MESSAGES, headers=headers, now=NOW, max_ttl=24 * 3600
        )


@pytest.mark.parametrize(
    ("given", "methods"),
    [(["get", "Post"], ["GET", "POST"]), (["GET", "get"], ["GET"]), (None, ["GET"])],
)
def test_methods_are_parsed_into_one_spelling(given: list[str] | None, methods: list[str]) -> None:
    assert (
        create_signed_url(KEY, paths=[MESSAGES], project="p1", now=NOW, methods=given).methods
        == methods
    )


@pytest.mark.parametrize(
    "method",
    ["FOO", " GET", "GET\x00", "ＧＥＴ", "G E T", "", "HEAD", "OPTIONS"],  # noqa: RUF001
)
def test_an_unknown_method_is_refused(method: str) -> None:
    with pytest.raises(ValueError, match="Unknown method"):
        create_signed_url(KEY, paths=[MESSAGES], project="p1", now=NOW, methods=[method])


def test_head_is_granted_with_get(headers: dict[str, str]) -> None:
    assert verify_signed_request(KEY, method="HEAD", path=MESSAGES, headers=headers, now=NOW)
