"""Zaqar face tokens: issued for a credential, refused when expired, tampered or revoked."""

from __future__ import annotations

import base64
import json

import pytest

from deadletter.auth.credentials import Credential, MasterKey, issue
from deadletter.auth.errors import TokenExpired, TokenInvalid, TokenRevoked
from deadletter.auth.roles import Role
from deadletter.auth.tokens import TokenClaims, issue_token, verify_token

NOW = 1_800_000_000.0
MASTER = MasterKey.generate()
KEY = MASTER.token_key


@pytest.fixture
def credential() -> Credential:
    return issue(MASTER, "team-a", Role.CONSUMER, NOW)[0]


def test_a_token_verifies_and_names_its_credential(credential: Credential) -> None:
    token = issue_token(KEY, credential, NOW, ttl=600)
    claims = verify_token(KEY, token, NOW + 599, lambda k: credential)
    assert claims == TokenClaims(
        "team-a", credential.key_id, Role.CONSUMER, int(NOW), int(NOW) + 600
    )


def test_an_expired_token_is_refused(credential: Credential) -> None:
    token = issue_token(KEY, credential, NOW, ttl=600)
    with pytest.raises(TokenExpired):
        verify_token(KEY, token, NOW + 600, lambda k: credential)


def test_a_tampered_payload_is_refused(credential: Credential) -> None:
    prefix, body, mac = issue_token(KEY, credential, NOW).split(".")
    doc = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    doc["r"] = "admin"
    forged = base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()
    with pytest.raises(TokenInvalid):
        verify_token(KEY, f"{prefix}.{forged}.{mac}", NOW, lambda k: credential)


def test_a_token_from_another_server_is_refused(credential: Credential) -> None:
    token = issue_token(MasterKey.generate().token_key, credential, NOW)
    with pytest.raises(TokenInvalid):
        verify_token(KEY, token, NOW, lambda k: credential)


@pytest.mark.parametrize("junk", ["", "abc", "dlt1.a.b", "dlt1..", "dlt2.x.y", "dlt1.a!.b"])
def test_malformed_tokens_are_refused(junk: str, credential: Credential) -> None:
    with pytest.raises(TokenInvalid):
        verify_token(KEY, junk, NOW, lambda k: credential)


def test_a_revoked_credential_ends_its_tokens(credential: Credential) -> None:
    token = issue_token(KEY, credential, NOW)
    with pytest.raises(TokenRevoked):
        verify_token(KEY, token, NOW, lambda k: credential.revoke())
    with pytest.raises(TokenRevoked):
        verify_token(KEY, token, NOW, lambda k: None)


def test_a_changed_role_ends_its_tokens(credential: Credential) -> None:
    token = issue_token(KEY, credential, NOW)
    demoted = Credential(**{**credential.__dict__, "role": Role.READER})
    with pytest.raises(TokenRevoked):
        verify_token(KEY, token, NOW, lambda k: demoted)


def test_no_token_for_a_revoked_credential_or_an_unbounded_lifetime(
    credential: Credential,
) -> None:
    with pytest.raises(TokenRevoked):
        issue_token(KEY, credential.revoke(), NOW)
    with pytest.raises(ValueError):
        issue_token(KEY, credential, NOW, ttl=10**9)
