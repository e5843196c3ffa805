"""Credentials kept in the store and every check the faces make with them (`Authority`).

The faces import the engine and the domain only; this module is their one door to
`deadletter.auth`: it opens stored secrets with the master key, verifies SigV4 signatures,
tokens and Zaqar signed URLs against the stored credentials, and re-exports the names the
faces need to map refusals onto their wire errors.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import replace

from deadletter.auth import errors as auth_errors
from deadletter.auth import roles, signed_urls, sigv4, tokens
from deadletter.auth.credentials import Credential, MasterKey, issue, reseal
from deadletter.auth.roles import Action, Role
from deadletter.domain import errors
from deadletter.domain.limits import CREDENTIALS_PER_PROJECT
from deadletter.domain.projects import check_tenant
from deadletter.engine.engine import Engine
from deadletter.storage.base import CredentialRecord, Transaction

__all__ = [
    "Action",
    "Authority",
    "Credential",
    "Role",
    "auth_errors",
    "parse_role",
]


def record_of(credential: Credential) -> CredentialRecord:
    return CredentialRecord(
        key_id=credential.key_id,
        project=credential.project,
        role=credential.role.value,
        account_id=credential.account_id,
        sealed_secret=credential.sealed_secret,
        created_at=credential.created_at,
        revoked=credential.revoked,
    )


def credential_of(record: CredentialRecord) -> Credential:
    return Credential(
        key_id=record.key_id,
        project=record.project,
        role=Role(record.role),
        account_id=record.account_id,
        sealed_secret=record.sealed_secret,
        created_at=record.created_at,
        revoked=record.revoked,
    )


def parse_role(text: object) -> Role:
    """A role as a client spells it (roles.parse_role), or InvalidInput."""
    try:
        return roles.parse_role(text)
    except roles.UnknownChoice as exc:
        raise errors.InvalidInput(str(exc)) from None


def insert(tx: Transaction, credential: Credential) -> None:
    """Store a new credential; an account id is one project's (the SQS face reaches a
    project's queues by it), so a second project claiming it is refused."""
    others = tx.account_projects(credential.account_id) - {credential.project}
    if others:
        raise errors.Conflict(
            f"Account id {credential.account_id} already belongs to another project."
        )
    live = sum(not r.revoked for r in tx.list_credentials(credential.project))
    if live >= CREDENTIALS_PER_PROJECT:
        raise errors.LimitExceeded(
            f"project {credential.project!r} already has {CREDENTIALS_PER_PROJECT} credentials"
            " that are not revoked, the most one project may have; revoke one first"
        )
    tx.insert_credential(record_of(credential))


def reseal_all(engine: Engine, old: MasterKey, new: MasterKey) -> int:
    """Move every stored secret (revoked credentials' too) from the `old` master key to the
    `new` one; returns how many. One transaction: a secret that does not open under `old`,
    or any other failure, leaves every credential as it was, so the database is never
    half under one key and half under the other."""
    moved: list[str] = []

    def work(tx: Transaction) -> None:
        moved.clear()  # the runner may run this again after a deadlock
        for listed in tx.list_credentials(None):
            # Read again under a lock: a revocation committed since the listing must stay.
            current = tx.get_credential(listed.key_id, lock=True)
            if current is None:
                continue
            sealed = reseal(old, new, current.sealed_secret, current.key_id)
            tx.update_credential(replace(current, sealed_secret=sealed))
            moved.append(current.key_id)

    engine.add_credential(work)
    return len(moved)


class Authority:
    """The stored credentials, opened with the server's master key."""

    def __init__(
        self, engine: Engine, master: MasterKey, signed_url_max_ttl: int = signed_urls.MAX_TTL
    ) -> None:
        self.engine = engine
        self.master = master
        self.signed_url_max_ttl = signed_url_max_ttl

    def now(self) -> float:
        return self.engine.clock.now()

    # Management

    def create(self, project: str, role: Role | str) -> tuple[Credential, str]:
        """A new credential and its secret (shown once; only the sealed form is kept).

        A caller that decides who may issue `role` parses it first (`parse_role`) and passes
        the Role, so the role stored is the role that was checked."""
        check_tenant(project, "A credential's project")
        chosen = role if isinstance(role, Role) else parse_role(role)
        credential, secret = issue(self.master, project, chosen, self.now())
        self.engine.add_credential(lambda tx: insert(tx, credential))
        return credential, secret

    def get(self, key_id: str) -> Credential | None:
        # Every lookup by a client's key id (token, KEYID:SECRET, SigV4, admin routes) comes
        # here: a NUL names no credential, and PostgreSQL text cannot even be asked for one.
        if "\x00" in key_id:
            return None
        record = self.engine.credential(key_id)
        return credential_of(record) if record else None

    def require(self, key_id: str) -> Credential:
        found = self.get(key_id)
        if found is None:
            raise errors.NotFound(f"Credential {key_id} not found.")
        return found

    def list_for(self, project: str | None) -> list[Credential]:
        if project is not None and "\x00" in project:
            return []
        return [credential_of(r) for r in self.engine.credentials(project)]

    def project_of_account(self, account: str) -> str:
        """The project whose queue URLs show `account` (an operator reaching another project
        by URL or ARN; rare, so a scan of the credentials is enough). An account no
        credential carries is a project named by its 12 digits."""
        for credential in self.list_for(None):
            if credential.account_id == account:
                return credential.project
        return account

    def revoke(self, key_id: str) -> Credential:
        record = self.engine.change_credential(key_id, lambda r: replace(r, revoked=True))
        if record is None:
            raise errors.NotFound(f"Credential {key_id} not found.")
        return credential_of(record)

    def rotate(self, key_id: str) -> tuple[Credential, str]:
        """A new key id and secret for the same project and role; the old credential is
        revoked in the same transaction, so its signatures and tokens end at once."""
        old = self.require(key_id)
        if old.revoked:
            raise errors.Conflict(f"Credential {key_id} is revoked.")
        new, secret = issue(self.master, old.project, old.role, self.now(), old.account_id)

        def work(tx: Transaction) -> None:
            current = tx.get_credential(key_id, lock=True)
            if current is None or current.revoked:
                raise errors.Conflict(f"Credential {key_id} is revoked.")
            tx.update_credential(replace(current, revoked=True))
            tx.insert_credential(record_of(new))

        self.engine.add_credential(work)
        return new, secret

    # Checks

    def secret_of(self, key_id: str) -> str | None:
        """The secret of an active credential (SigV4 needs the secret itself)."""
        credential = self.get(key_id)
        if credential is None or credential.revoked:
            return None
        return self.master.unseal(credential.sealed_secret, key_id)

    def check_secret(self, key_id: str, secret: str) -> Credential:
        """The active credential `key_id` if `secret` is its secret (TokenInvalid otherwise)."""
        credential = self.get(key_id)
        if credential is None or credential.revoked:
            raise auth_errors.TokenInvalid("Unknown or revoked key id, or wrong secret.")
        expected = self.master.unseal(credential.sealed_secret, key_id)
        if not hmac.compare_digest(expected.encode(), secret.encode()):
            raise auth_errors.TokenInvalid("Unknown or revoked key id, or wrong secret.")
        return credential

    def issue_token(self, key_id: str, secret: str, ttl: int = tokens.DEFAULT_TTL) -> str:
        credential = self.check_secret(key_id, secret)
        return tokens.issue_token(self.master.token_key, credential, self.now(), ttl)

    def check_token(self, token: str) -> Credential:
        """The credential behind an `X-Auth-Token`: a token, or `KEYID:SECRET` itself."""
        if ":" in token and not token.startswith(tokens.PREFIX + "."):
            key_id, _, secret = token.partition(":")
            return self.check_secret(key_id, secret)
        claims = tokens.verify_token(self.master.token_key, token, self.now(), self.get)
        return self.require(claims.key_id)

    def verify_sigv4(
        self, method: str, path: str, query: str, headers: sigv4.Headers, body: bytes
    ) -> tuple[Credential, str]:
        """(credential, region) of a request signed with SigV4."""
        identity = sigv4.verify(method, path, query, headers, body, self.secret_of, now=self.now())
        return self.require(identity.key_id), identity.region

    def share(
        self,
        project: str,
        queue: str,
        names: list[str] | None,
        methods: list[str] | None,
        expires: str | None,
    ) -> signed_urls.SignedUrl:
        return signed_urls.share(
            self.master.signed_url_key,
            project=project,
            queue=queue,
            now=self.now(),
            names=names,
            methods=methods,
            expires=expires,
            max_ttl=self.signed_url_max_ttl,
        )

    def sign(self, project: str, path: str, methods: list[str]) -> signed_urls.SignedUrl:
        """A signed URL for one path, valid for signed_urls.DEFAULT_TTL or the server's
        limit if shorter (a subscription's confirmation link)."""
        return signed_urls.create_signed_url(
            self.master.signed_url_key,
            paths=[path],
            project=project,
            now=self.now(),
            methods=methods,
            max_ttl=self.signed_url_max_ttl,
        )

    def check_signed_url(
        self, method: str, path: str, headers: Mapping[str, str]
    ) -> signed_urls.SignedUrl:
        return signed_urls.verify_signed_request(
            self.master.signed_url_key,
            method=method,
            path=path,
            headers=headers,
            now=self.now(),
            max_ttl=self.signed_url_max_ttl,
        )


def is_signed_url(headers: Mapping[str, str]) -> bool:
    return signed_urls.is_signed(headers)
