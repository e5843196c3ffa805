"""Zaqar's pre-signed URLs: `POST /v2/queues/{q}/share` and the `URL-*` headers that use it.

The signature is Zaqar's own (zaqar/common/urls.py `create_signed_url`), so a document
shared by Zaqar's client works unchanged: HMAC-SHA256, hex, over

    <paths sorted, comma-joined>\\n<methods sorted, comma-joined>\\n<project>\\n<expires>

where each separator is the two characters backslash and `n` (Zaqar formats a raw string)
and `expires` is UTC `YYYY-MM-DDTHH:MM:SS`. A request then carries `URL-Signature`,
`URL-Expires`, `URL-Methods`, `URL-Paths` and `X-Project-ID`; Zaqar answers 404 to any that
does not verify, and so does this module's caller (`SignedUrlRefused.status`).

One deliberate difference: Zaqar matches the request path against each signed path as a
regular expression (`re.search`); here a signed path grants itself and what lies below it
(`.../messages` grants `.../messages/{id}`), and nothing else.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from deadletter.auth.errors import SignedUrlRefused
from deadletter.auth.roles import as_get, parse_choice

DATE_FORMAT = "%Y-%m-%dT%H:%M:%S"
DEFAULT_TTL = 24 * 3600
# The longest a signed URL may live (`--signed-url-max-lifetime`): it cannot be revoked on its
# own, so a leaked one must end by itself.
MAX_TTL = 7 * 24 * 3600
# What a share may name, as in Zaqar (`subscriptions` has no meaning here).
SHAREABLE = frozenset({"messages", "claims"})


class Method(StrEnum):
    """What a signed URL may grant (HEAD goes with GET)."""

    GET = "GET"
    POST = "POST"
    PUT = "PUT"
    PATCH = "PATCH"
    DELETE = "DELETE"


def parse_methods(methods: list[str] | None) -> list[str]:
    """The methods of a share, each parsed as every access-gating value is (roles.parse_choice:
    any case, nothing else), canonical, once each; GET when none are named, as in Zaqar."""
    chosen = {parse_choice(Method, m, "method") for m in methods or ["GET"]}
    return sorted(m.value for m in chosen)


@dataclass(frozen=True)
class SignedUrl:
    """A share document: what `POST .../share` answers and what a client sends back."""

    paths: list[str]
    methods: list[str]
    project: str
    expires: str
    signature: str

    def as_json(self) -> dict[str, object]:
        return {
            "paths": self.paths,
            "methods": self.methods,
            "project": self.project,
            "expires": self.expires,
            "signature": self.signature,
        }


def create_signed_url(
    key: bytes,
    *,
    paths: list[str],
    project: str,
    now: float,
    methods: list[str] | None = None,
    expires: str | None = None,
    max_ttl: int = MAX_TTL,
) -> SignedUrl:
    """Zaqar's `create_signed_url`: ValueError for what Zaqar refuses (no paths, an integer
    or past `expires`), and for what it does not: an unknown method, or an `expires` more
    than `max_ttl` seconds ahead."""
    if not paths:
        raise ValueError("`paths` must be a non-empty list")
    methods = parse_methods(methods)
    paths = sorted(paths)
    start = datetime.fromtimestamp(now, UTC).replace(tzinfo=None)
    if expires is None:
        when = start + timedelta(seconds=min(DEFAULT_TTL, max_ttl))
    else:
        when = _parse_expires(expires)
    if when <= start:
        raise ValueError("`expires` is lower than the current time")
    if when > start + timedelta(seconds=max_ttl):
        raise ValueError(
            f"`expires` may be at most {max_ttl} seconds from now"
            f" ({(start + timedelta(seconds=max_ttl)).strftime(DATE_FORMAT)})"
        )
    expires_text = when.strftime(DATE_FORMAT)
    return SignedUrl(
        paths=paths,
        methods=methods,
        project=project,
        expires=expires_text,
        signature=_sign(key, paths, methods, project, expires_text),
    )


def share(
    key: bytes,
    *,
    project: str,
    queue: str,
    now: float,
    names: list[str] | None = None,
    methods: list[str] | None = None,
    expires: str | None = None,
    max_ttl: int = MAX_TTL,
) -> SignedUrl:
    """What `POST /v2/queues/{queue}/share` does with its body `{paths, methods, expires}`:
    each path is a resource name under the queue; none means its messages."""
    names = names or ["messages"]
    unknown = set(names) - SHAREABLE
    if unknown:
        raise ValueError(f"Invalid paths: {sorted(unknown)}")
    paths = [f"/v2/queues/{queue}/{name}" for name in names]
    return create_signed_url(
        key,
        paths=paths,
        project=project,
        now=now,
        methods=methods,
        expires=expires,
        max_ttl=max_ttl,
    )


def is_signed(headers: Mapping[str, str]) -> bool:
    return any(name.lower() == "url-signature" for name in headers)


def verify_signed_request(
    key: bytes,
    *,
    method: str,
    path: str,
    headers: Mapping[str, str],
    now: float,
    max_ttl: int = MAX_TTL,
) -> SignedUrl:
    """The grant a request's `URL-*` headers carry, if it covers this method and path.

    A URL that expires later than `max_ttl` from now is refused as well: lowering the limit
    ends the URLs issued under a higher one."""
    fields = {name.lower(): value for name, value in headers.items()}
    signature = fields.get("url-signature", "")
    project = fields.get("x-project-id", "")
    expires = fields.get("url-expires", "")
    methods = [m for m in fields.get("url-methods", "").split(",") if m]
    paths = [p for p in fields.get("url-paths", "").split(",") if p]
    if not (signature and project and expires and methods and paths):
        raise SignedUrlRefused("The signed URL headers are incomplete.")
    if as_get(method) not in methods:
        raise SignedUrlRefused("The signed URL does not allow this method.")
    if not any(path == p or path.startswith(p.rstrip("/") + "/") for p in paths):
        raise SignedUrlRefused("The signed URL does not cover this path.")
    try:
        when = _parse_expires(expires)
    except ValueError:
        raise SignedUrlRefused("URL-Expires is not a valid time.") from None
    start = datetime.fromtimestamp(now, UTC).replace(tzinfo=None)
    if when <= start:
        raise SignedUrlRefused("The signed URL has expired.")
    if when > start + timedelta(seconds=max_ttl):
        raise SignedUrlRefused("The signed URL lives longer than this server allows.")
    methods, paths = sorted(methods), sorted(paths)
    expected = _sign(key, paths, methods, project, when.strftime(DATE_FORMAT))
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        raise SignedUrlRefused("The signed URL's signature does not match.")
    return SignedUrl(paths, methods, project, when.strftime(DATE_FORMAT), signature)


def _sign(key: bytes, paths: list[str], methods: list[str], project: str, expires: str) -> str:
    body = "\\n".join([",".join(paths), ",".join(methods), project, expires])
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def _parse_expires(text: str) -> datetime:
    """An ISO 8601 time as naive UTC, as Zaqar normalises it; integers refused as Zaqar does."""
    if text.strip().lstrip("-").isdigit():
        raise ValueError(
            "`expires` should be date format, for example 2016-01-01T00:00:00, not integer"
            f" value: {text}"
        )
    when = datetime.fromisoformat(text.strip())
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when
