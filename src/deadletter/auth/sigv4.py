"""AWS Signature Version 4 verification, for headers (`Authorization`) and presigned queries.

The canonical request is rebuilt the way botocore builds it (the reference every AWS SDK
agrees with): the path as sent on the wire, dot segments and repeated slashes removed, then
percent-encoded once more (non-S3 services double-encode); the query decoded and re-encoded
with RFC 3986 unreserved characters, sorted; the signed headers lower-cased, trimmed and
sorted; the payload's SHA-256. The caller passes the raw path and query string (before any
percent-decoding) and the body bytes.

Refusals follow SQS: a clock more than 15 minutes off is `SignatureDoesNotMatch` with
AWS's "Signature expired" text; a presigned URL past its X-Amz-Expires is `RequestExpired`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import quote, unquote_plus

from deadletter.auth.errors import (
    IncompleteSignature,
    InvalidClientTokenId,
    MissingAuthenticationToken,
    RequestExpired,
    SignatureDoesNotMatch,
)

ALGORITHM = "AWS4-HMAC-SHA256"
MAX_SKEW = 15 * 60
MAX_PRESIGN_EXPIRES = 7 * 24 * 3600
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
_TIMESTAMP = "%Y%m%dT%H%M%SZ"
_AUTH_FIELD = re.compile(r"(Credential|SignedHeaders|Signature)=([^,\s]*)")
_QUERY_AUTH = ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-SignedHeaders")

SecretLookup = Callable[[str], str | None]
Headers = Mapping[str, str] | Iterable[tuple[str, str]]


@dataclass(frozen=True)
class SigV4Identity:
    """Who signed a verified request, and the scope they signed it for."""

    key_id: str
    region: str
    service: str
    signed_at: float
    presigned: bool


@dataclass(frozen=True)
class _Parsed:
    key_id: str
    date: str
    region: str
    service: str
    signed_headers: list[str]
    signature: str
    timestamp: str
    expires: int | None


def verify(
    method: str,
    path: str,
    query: str,
    headers: Headers,
    body: bytes,
    lookup: SecretLookup,
    *,
    service: str = "sqs",
    now: float | None = None,
    allow_unsigned_payload: bool = False,
) -> SigV4Identity:
    """Verify a request signed with SigV4 in its headers or its query string.

    `lookup` gives the secret of an active key id, or None for an unknown or revoked one.
    Raises a `SigV4Error` subclass carrying the AWS code and HTTP status.
    """
    now = time.time() if now is None else now
    fields = _headers(headers)
    pairs = _query_pairs(query)
    names = {k for k, _ in pairs}
    if "authorization" in fields:
        parsed = _from_header(fields)
    elif "X-Amz-Signature" in names or "X-Amz-Credential" in names:
        parsed = _from_query(pairs)
    else:
        raise MissingAuthenticationToken()
    if parsed.service != service:
        raise SignatureDoesNotMatch(f"Credential should be scoped to correct service: '{service}'.")
    if parsed.date != parsed.timestamp[:8]:
        raise SignatureDoesNotMatch(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date"
            " from HTTP: " + f"'{parsed.date}' != '{parsed.timestamp[:8]}'"
        )
    if "host" not in parsed.signed_headers:
        raise SignatureDoesNotMatch("'Host' must be a signed header.")
    unsigned = sorted(
        n for n in fields if n.startswith("x-amz-") and n not in parsed.signed_headers
    )
    if unsigned:
        raise SignatureDoesNotMatch(f"Headers must be signed: {', '.join(unsigned)}.")
    missing = [n for n in parsed.signed_headers if n not in fields]
    if missing:
        raise SignatureDoesNotMatch(f"Signed headers are missing: {', '.join(missing)}.")
    secret = lookup(parsed.key_id)
    if secret is None:
        raise InvalidClientTokenId()
    signed_at = _check_time(parsed, now)
    payload = _payload_hash(fields, body, allow_unsigned_payload)
    canonical = "\n".join(
        [
            method.upper(),
            canonical_path(path),
            canonical_query(p for p in pairs if p[0] != "X-Amz-Signature"),
            "".join(f"{n}:{_trim(fields[n])}\n" for n in parsed.signed_headers),
            ";".join(parsed.signed_headers),
            payload,
        ]
    )
    scope = f"{parsed.date}/{parsed.region}/{parsed.service}/aws4_request"
    to_sign = "\n".join(
        [ALGORITHM, parsed.timestamp, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    expected = signature(secret, parsed.date, parsed.region, parsed.service, to_sign)
    if not hmac.compare_digest(expected.encode(), parsed.signature.encode()):
        raise SignatureDoesNotMatch()
    return SigV4Identity(
        key_id=parsed.key_id,
        region=parsed.region,
        service=parsed.service,
        signed_at=signed_at,
        presigned=parsed.expires is not None,
    )


def signature(secret: str, date: str, region: str, service: str, string_to_sign: str) -> str:
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


def canonical_path(raw_path: str) -> str:
    segments = [s for s in raw_path.split("/") if s and s != "."]
    kept: list[str] = []
    for s in segments:
        if s == "..":
            if kept:
                kept.pop()
        else:
            kept.append(s)
    path = "/" + "/".join(kept)
    if kept and raw_path.endswith("/"):
        path += "/"
    return quote(path, safe="/~")


def canonical_query(pairs: Iterable[tuple[str, str]]) -> str:
    encoded = sorted((quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in pairs)
    return "&".join(f"{k}={v}" for k, v in encoded)


def _query_pairs(query: str) -> list[tuple[str, str]]:
    pairs = []
    for part in query.split("&"):
        if part:
            key, _, value = part.partition("=")
            pairs.append((unquote_plus(key), unquote_plus(value)))
    return pairs


def _headers(headers: Headers) -> dict[str, str]:
    """Lower-cased names; repeated headers joined with commas, as SigV4 canonicalises them."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    out: dict[str, list[str]] = {}
    for name, value in items:
        out.setdefault(name.lower(), []).append(_trim(value))
    return {name: ",".join(values) for name, values in out.items()}


def _trim(value: str) -> str:
    return " ".join(value.split())


def _scope(credential: str) -> tuple[str, str, str, str]:
    parts = credential.split("/")
    if len(parts) != 5 or parts[4] != "aws4_request" or not all(parts):
        raise IncompleteSignature(
            f"Credential must have exactly 5 slash-delimited elements, e.g."
            f" keyid/date/region/service/term, got '{credential}'"
        )
    return parts[0], parts[1], parts[2], parts[3]


def _from_header(fields: dict[str, str]) -> _Parsed:
    value = fields["authorization"]
    algorithm, _, rest = value.partition(" ")
    if algorithm != ALGORITHM:
        raise IncompleteSignature(f"Unsupported authorization type: {algorithm or value!r}")
    found = dict(_AUTH_FIELD.findall(rest))
    absent = [k for k in ("Credential", "SignedHeaders", "Signature") if not found.get(k)]
    if absent:
        raise IncompleteSignature(
            f"Authorization header requires {', '.join(absent)} parameter(s)."
        )
    timestamp = fields.get("x-amz-date")
    if timestamp is None and "date" in fields:
        try:
            when = parsedate_to_datetime(fields["date"])
        except (TypeError, ValueError):
            raise IncompleteSignature("The Date header is not a valid HTTP date.") from None
        timestamp = when.astimezone(UTC).strftime(_TIMESTAMP)
    if timestamp is None:
        raise IncompleteSignature(
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
        )
    key_id, date, region, service = _scope(found["Credential"])
    return _Parsed(
        key_id=key_id,
        date=date,
        region=region,
        service=service,
        signed_headers=found["SignedHeaders"].split(";"),
        signature=found["Signature"],
        timestamp=timestamp,
        expires=None,
    )


def _from_query(pairs: list[tuple[str, str]]) -> _Parsed:
    params = dict(pairs)
    absent = [k for k in (*_QUERY_AUTH, "X-Amz-Expires", "X-Amz-Signature") if not params.get(k)]
    if absent:
        raise IncompleteSignature(f"AWS query-string parameters missing: {', '.join(absent)}.")
    if params["X-Amz-Algorithm"] != ALGORITHM:
        raise IncompleteSignature(f"Unsupported algorithm: {params['X-Amz-Algorithm']!r}")
    raw_expires = params["X-Amz-Expires"]
    if not raw_expires.isdigit() or not 1 <= int(raw_expires) <= MAX_PRESIGN_EXPIRES:
        raise IncompleteSignature(
            f"X-Amz-Expires must be a number of seconds from 1 to {MAX_PRESIGN_EXPIRES}."
        )
    key_id, date, region, service = _scope(params["X-Amz-Credential"])
    return _Parsed(
        key_id=key_id,
        date=date,
        region=region,
        service=service,
        signed_headers=params["X-Amz-SignedHeaders"].lower().split(";"),
        signature=params["X-Amz-Signature"],
        timestamp=params["X-Amz-Date"],
        expires=int(raw_expires),
    )


def _check_time(parsed: _Parsed, now: float) -> float:
    try:
        signed = datetime.strptime(parsed.timestamp, _TIMESTAMP).replace(tzinfo=UTC)
    except ValueError:
        raise IncompleteSignature(
            f"Date must be in ISO-8601 'basic format', got '{parsed.timestamp}'."
        ) from None
    at = signed.timestamp()
    if at > now + MAX_SKEW:
        raise SignatureDoesNotMatch(
            f"Signature not yet current: {parsed.timestamp} is still later than"
            f" {_stamp(now + MAX_SKEW)} ({_stamp(now)} + 15 min.)"
        )
    if parsed.expires is not None:
        if now > at + parsed.expires:
            raise RequestExpired()
    elif at < now - MAX_SKEW:
        raise SignatureDoesNotMatch(
            f"Signature expired: {parsed.timestamp} is now earlier than"
            f" {_stamp(now - MAX_SKEW)} ({_stamp(now)} - 15 min.)"
        )
    return at


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime(_TIMESTAMP)


def _payload_hash(fields: dict[str, str], body: bytes, allow_unsigned: bool) -> str:
    """The payload hash that was signed. A client may state it in x-amz-content-sha256;
    the statement is checked against the body, so the body cannot be swapped under a
    valid signature."""
    actual = hashlib.sha256(body).hexdigest()
    stated = fields.get("x-amz-content-sha256")
    if stated is None:
        return actual
    if stated == UNSIGNED_PAYLOAD:
        if not allow_unsigned:
            raise SignatureDoesNotMatch("Unsigned payloads are not accepted by this server.")
        return stated
    if not hmac.compare_digest(stated.lower().encode(), actual.encode()):
        raise SignatureDoesNotMatch(
            "The provided 'x-amz-content-sha256' header does not match what was computed."
        )
    return stated
