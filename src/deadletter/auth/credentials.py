"""Credentials (key id, secret, project, role) and the server's master key that seals secrets.

SigV4 is a shared-secret scheme: to check a signature the server must hold the secret
itself, not a hash of it. So secrets are stored sealed (AES-256-GCM) under a key derived
from the server's master key, with the key id as associated data so a sealed secret copied
onto another credential's row does not open. The master key never enters the database: it
comes from `DEADLETTER_MASTER_KEY` or a 0600 key file beside the database.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from deadletter.auth.errors import MasterKeyError
from deadletter.auth.roles import Action, Role, permits
from deadletter.domain.projects import is_tenant

KEY_ID_PREFIX = "DLAK"
MASTER_KEY_ENV = "DEADLETTER_MASTER_KEY"
MASTER_KEY_BYTES = 32
_SEALED_PREFIX = "v1."
_NONCE_BYTES = 12


def new_key_id() -> str:
    """`DLAK` and 16 base32 characters: shaped like an AWS access key id (20 upper-case
    characters), so SDKs and tools that check the shape accept it."""
    return KEY_ID_PREFIX + base64.b32encode(secrets.token_bytes(10)).decode()


def new_secret() -> str:
    return secrets.token_urlsafe(30)


def account_id_for(project: str) -> str:
    """The 12-digit SQS account id of a project.

    A project named by 12 digits is its own account id (as the SQS face has always treated
    such access keys); any other name maps to a stable digest. Stored on the credential, so
    the store can refuse the (unlikely) clash of two projects on one account id.
    """
    if len(project) == 12 and project.isdigit():
        return project
    digest = hashlib.sha256(project.encode()).digest()
    return f"{int.from_bytes(digest[:8], 'big') % 10**12:012d}"


@dataclass(frozen=True)
class Credential:
    key_id: str
    project: str
    role: Role
    account_id: str
    sealed_secret: str
    created_at: float
    revoked: bool = False

    def may(self, action: Action, project: str) -> bool:
        """Whether this credential may do `action` in `project` (never once revoked). A
        credential stored before tenant names were held to `names.TENANT` (one named like
        another tenant's derived project, `proja@eu-west-1`) may do nothing: it could reach
        that tenant's queues. An operator can still list and revoke it."""
        return (
            not self.revoked
            and is_tenant(self.project)
            and permits(self.role, self.project, project, action)
        )

    def revoke(self) -> Credential:
        return replace(self, revoked=True)


class MasterKey:
    """The server's root secret. Each use gets its own derived key (HKDF), so a token MAC
    can never be replayed as a signed-URL signature or vice versa."""

    def __init__(self, raw: bytes) -> None:
        if len(raw) != MASTER_KEY_BYTES:
            raise MasterKeyError(f"The master key must be {MASTER_KEY_BYTES} bytes.")
        self._raw = raw
        self._aead = AESGCM(self._derive(b"deadletter secret sealing v1"))
        self.token_key = self._derive(b"deadletter zaqar tokens v1")
        self.signed_url_key = self._derive(b"deadletter signed urls v1")

    def _derive(self, purpose: bytes) -> bytes:
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(self._raw)

    @classmethod
    def generate(cls) -> MasterKey:
        return cls(secrets.token_bytes(MASTER_KEY_BYTES))

    @classmethod
    def from_text(cls, text: str) -> MasterKey:
        """A key written as base64 (URL-safe or standard, padding optional)."""
        cleaned = text.strip().replace("+", "-").replace("/", "_")
        try:
            raw = base64.urlsafe_b64decode(cleaned + "=" * (-len(cleaned) % 4))
        except (binascii.Error, ValueError):
            raise MasterKeyError("The master key is not valid base64.") from None
        return cls(raw)

    def to_text(self) -> str:
        return base64.urlsafe_b64encode(self._raw).decode()

    def seal(self, secret: str, key_id: str) -> str:
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, secret.encode(), _associated(key_id))
        return _SEALED_PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode()

    def unseal(self, sealed: str, key_id: str) -> str:
        if not sealed.startswith(_SEALED_PREFIX):
            raise MasterKeyError("The sealed secret is not in a known format.")
        try:
            blob = base64.urlsafe_b64decode(sealed[len(_SEALED_PREFIX) :])
            nonce, body = blob[:_NONCE_BYTES], blob[_NONCE_BYTES:]
            return self._aead.decrypt(nonce, body, _associated(key_id)).decode()
        except (InvalidTag, binascii.Error, ValueError):
            raise MasterKeyError(
                "The sealed secret cannot be opened: wrong master key, or the stored data"
                " was altered."
            ) from None


def _associated(key_id: str) -> bytes:
    return b"deadletter credential " + key_id.encode()


def seal_secret(master: MasterKey, secret: str, key_id: str) -> str:
    return master.seal(secret, key_id)


def unseal_secret(master: MasterKey, sealed: str, key_id: str) -> str:
    return master.unseal(sealed, key_id)


def reseal(old: MasterKey, new: MasterKey, sealed: str, key_id: str) -> str:
    """A sealed secret moved under a new master key (key rotation, one credential)."""
    return new.seal(old.unseal(sealed, key_id), key_id)


def issue(
    master: MasterKey,
    project: str,
    role: Role,
    now: float,
    account_id: str | None = None,
) -> tuple[Credential, str]:
    """A new credential and its secret. The secret is returned once, to show to its owner;
    only the sealed form is kept."""
    key_id = new_key_id()
    secret = new_secret()
    credential = Credential(
        key_id=key_id,
        project=project,
        role=role,
        account_id=account_id or account_id_for(project),
        sealed_secret=master.seal(secret, key_id),
        created_at=now,
    )
    return credential, secret


def key_file_beside(database: Path) -> Path:
    """Where the key file of a SQLite database lives: next to it, so both are backed up
    and moved together (and readable by the same account only)."""
    return database.with_name(database.name + ".key")


def load_master_key(
    key_file: Path | None,
    environ: Mapping[str, str] = os.environ,
    create: bool = True,
) -> MasterKey:
    """The master key from `DEADLETTER_MASTER_KEY`, else from `key_file`.

    A missing key file is created (0600, exclusively, so two servers starting at once end
    with one key). An existing one that group or others may read is refused, as ssh does
    with private keys: a leaked key opens every stored secret.
    """
    text = environ.get(MASTER_KEY_ENV)
    if text:
        return MasterKey.from_text(text)
    if key_file is None:
        raise MasterKeyError(
            f"No master key: set {MASTER_KEY_ENV} or give a key file (needed for a"
            " PostgreSQL store, which has no directory of its own)."
        )
    if create:
        key = MasterKey.generate()
        if _create_key_file(key_file, key):
            return key
    try:
        mode = key_file.stat().st_mode
    except FileNotFoundError:
        raise MasterKeyError(f"The master key file {key_file} does not exist.") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise MasterKeyError(
            f"The master key file {key_file} is accessible to other users"
            f" (mode {stat.S_IMODE(mode):o}); run: chmod 600 {key_file}"
        )
    return MasterKey.from_text(key_file.read_text())


def write_key_file(key_file: Path, key: MasterKey) -> None:
    """Write `key` to a new file only its owner may read (master key rotation).

    An existing file is refused, never overwritten: it may hold the only copy of the key
    that opens the stored secrets. The file is flushed to disk before this returns, so a
    database committed under the key never outlives it in a crash.
    """
    if not _create_key_file(key_file, key):
        raise MasterKeyError(f"The key file {key_file} already exists; choose a new path.")


def _create_key_file(key_file: Path, key: MasterKey) -> bool:
    """Create `key_file` (0600, exclusively) holding `key`; False if it already exists."""
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(key.to_text() + "\n")
        out.flush()
        os.fsync(out.fileno())
    return True
