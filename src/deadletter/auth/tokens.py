"""Zaqar face tokens: `dlt1.<payload>.<mac>`, issued for a credential, checked on each request.

Zaqar clients send a token (`X-Auth-Token`), not a signature, so a credential's secret is
exchanged once for a short-lived token. The token is self-contained (project, key id, role,
expiry) and MACed with a key derived from the master key, so checking it needs no lookup
except the one that matters: whether its credential is still active and still holds that
role. Revoking a credential therefore ends its tokens at once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from deadletter.auth.credentials import Credential
from deadletter.auth.errors import TokenExpired, TokenInvalid, TokenRevoked
from deadletter.auth.roles import Role

PREFIX = "dlt1"
DEFAULT_TTL = 3600
MAX_TTL = 24 * 3600
_PART = re.compile(r"[A-Za-z0-9_-]+")

CredentialLookup = Callable[[str], Credential | None]


@dataclass(frozen=True)
class TokenClaims:
    project: str
    key_id: str
    role: Role
    issued_at: int
    expires_at: int


def issue_token(key: bytes, credential: Credential, now: float, ttl: int = DEFAULT_TTL) -> str:
    if not 1 <= ttl <= MAX_TTL:
        raise ValueError(f"A token lives from 1 to {MAX_TTL} seconds.")
    if credential.revoked:
        raise TokenRevoked()
    payload = {
        "p": credential.project,
        "k": credential.key_id,
        "r": credential.role.value,
        "i": int(now),
        "e": int(now) + ttl,
    }
    body = _b64(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode())
    return f"{PREFIX}.{body}.{_b64(_mac(key, body))}"


def verify_token(key: bytes, token: str, now: float, lookup: CredentialLookup) -> TokenClaims:
    """The claims of a valid token; raises TokenInvalid, TokenExpired or TokenRevoked."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != PREFIX or not all(_PART.fullmatch(p) for p in parts[1:]):
        raise TokenInvalid()
    _, body, mac = parts
    try:
        given = _unb64(mac)
    except (binascii.Error, ValueError):
        raise TokenInvalid() from None
    if not hmac.compare_digest(given, _mac(key, body)):
        raise TokenInvalid()
    try:
        doc = json.loads(_unb64(body))
        claims = TokenClaims(
            project=str(doc["p"]),
            key_id=str(doc["k"]),
            role=Role(doc["r"]),
            issued_at=int(doc["i"]),
            expires_at=int(doc["e"]),
        )
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise TokenInvalid() from None
    if now >= claims.expires_at:
        raise TokenExpired()
    current = lookup(claims.key_id)
    if (
        current is None
        or current.revoked
        or current.project != claims.project
        or current.role is not claims.role
    ):
        raise TokenRevoked()
    return claims


def _mac(key: bytes, body: str) -> bytes:
    return hmac.new(key, f"{PREFIX}.{body}".encode(), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
