"""Master key rotation, offline on the database: every stored secret moves under the new
key in one transaction, or none does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from click.testing import CliRunner

from deadletter.auth.credentials import MASTER_KEY_ENV, MasterKey, load_master_key
from deadletter.auth.errors import MasterKeyError, SignedUrlRefused, TokenRefused
from deadletter.auth.signed_urls import SignedUrl
from deadletter.cli.main import main
from deadletter.config import ServerConfig
from deadletter.engine import credentials as engine_credentials
from deadletter.engine.credentials import Authority, Role
from deadletter.engine.engine import Engine
from deadletter.server import OfflineSetupError, rotate_master_key
from deadletter.storage.base import Store


@pytest.fixture(autouse=True)
def no_master_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MASTER_KEY_ENV, raising=False)


@pytest.fixture
def old_key_file(tmp_path: Path) -> Path:
    path = tmp_path / "old.key"
    load_master_key(path, environ={})
    return path


@pytest.fixture
def issued(store: Store, old_key_file: Path) -> Iterator[list[tuple[str, str]]]:
    """Three credentials made under the old key, one of them revoked since."""
    authority = Authority(Engine(store), _key(old_key_file))
    made = [authority.create(project, role) for project, role in _ISSUED]
    authority.revoke(made[2][0].key_id)
    yield [(credential.key_id, secret) for credential, secret in made]


_ISSUED = [("alpha", Role.ADMIN), ("beta", Role.PRODUCER), ("alpha", Role.CONSUMER)]


def _key(path: Path) -> MasterKey:
    return load_master_key(path, environ={}, create=False)


def _sigv4(key_id: str, secret: str) -> tuple[str, str, str, list[tuple[str, str]], bytes]:
    request = AWSRequest(
        method="POST",
        url="http://localhost:9324/",
        data=b'{"QueueNamePrefix": ""}',
        headers={"X-Amz-Target": "AmazonSQS.ListQueues"},
    )
    SigV4Auth(Credentials(key_id, secret), "sqs", "us-east-1").add_auth(request)
    prepared = request.prepare()
    headers = [(k, str(v)) for k, v in prepared.headers.items()]
    return "POST", "/", "", [*headers, ("Host", "localhost:9324")], prepared.body or b""


def test_after_rotation_every_credential_works_under_the_new_key_only(
    store: Store, store_url: str, old_key_file: Path, issued: list[tuple[str, str]], tmp_path: Path
) -> None:
    # Given credentials issued under the old key, a token, and a signed URL
    engine = Engine(store)
    old_authority = Authority(engine, _key(old_key_file))
    old_token = old_authority.issue_token(*issued[0])
    shared = old_authority.share("alpha", "jobs", None, None, None)
    assert old_authority.check_token(old_token).key_id == issued[0][0]
    assert old_authority.check_signed_url("GET", shared.paths[0], _signed_headers(shared))
    new_key_file = tmp_path / "new.key"

    # If the master key is rotated
    config = ServerConfig(db=store_url, master_key_file=old_key_file)
    moved = rotate_master_key(config, new_key_file)

    # I expect every credential re-sealed, the new key file private to its owner
    assert moved == 3
    assert new_key_file.stat().st_mode & 0o777 == 0o600
    new = Authority(engine, _key(new_key_file))
    key_id, secret = issued[0]
    assert new.check_token(new.issue_token(key_id, secret)).key_id == key_id
    credential, region = new.verify_sigv4(*_sigv4(*issued[1]))
    assert (credential.key_id, region) == (issued[1][0], "us-east-1")
    assert new.secret_of(issued[1][0]) == issued[1][1]
    # the revoked one stays revoked, its secret moved too
    revoked = new.require(issued[2][0])
    assert revoked.revoked
    assert new.master.unseal(revoked.sealed_secret, revoked.key_id) == issued[2][1]
    # and nothing opens under the old key any more: secrets, tokens, signed URLs
    for stored in engine.credentials(None):
        with pytest.raises(MasterKeyError):
            old_authority.master.unseal(stored.sealed_secret, stored.key_id)
    with pytest.raises(MasterKeyError):
        old_authority.check_secret(*issued[0])
    with pytest.raises(TokenRefused):
        new.check_token(old_token)
    with pytest.raises(SignedUrlRefused, match="signature does not match"):
        new.check_signed_url("GET", shared.paths[0], _signed_headers(shared))


def _signed_headers(shared: SignedUrl) -> dict[str, str]:
    return {
        "URL-Signature": shared.signature,
        "URL-Expires": shared.expires,
        "URL-Methods": ",".join(shared.methods),
        "URL-Paths": ",".join(shared.paths),
        "X-Project-ID": shared.project,
    }


def test_a_failure_midway_leaves_every_credential_under_the_old_key(
    store: Store,
    store_url: str,
    old_key_file: Path,
    issued: list[tuple[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a re-sealing that fails on the second credential
    engine = Engine(store)
    before = {c.key_id: c.sealed_secret for c in engine.credentials(None)}
    real_reseal = engine_credentials.reseal
    calls: list[str] = []

    def failing(old: MasterKey, new: MasterKey, sealed: str, key_id: str) -> str:
        calls.append(key_id)
        if len(calls) == 2:
            raise MasterKeyError("The sealed secret cannot be opened.")
        return real_reseal(old, new, sealed, key_id)

    monkeypatch.setattr(engine_credentials, "reseal", failing)

    # If the master key is rotated
    with pytest.raises(OfflineSetupError, match="Nothing was changed"):
        rotate_master_key(
            ServerConfig(db=store_url, master_key_file=old_key_file), tmp_path / "new.key"
        )

    # I expect no credential changed: each still opens under the old key
    assert len(calls) == 2
    assert {c.key_id: c.sealed_secret for c in engine.credentials(None)} == before
    old = _key(old_key_file)
    for key_id, secret in issued:
        stored = engine.credential(key_id)
        assert stored is not None and old.unseal(stored.sealed_secret, key_id) == secret


def test_an_existing_new_key_file_is_refused_before_anything_changes(
    store: Store, store_url: str, old_key_file: Path, issued: list[tuple[str, str]], tmp_path: Path
) -> None:
    existing = tmp_path / "new.key"
    existing.write_text("keep me\n")
    before = {c.key_id: c.sealed_secret for c in Engine(store).credentials(None)}
    with pytest.raises(OfflineSetupError, match="already exists"):
        rotate_master_key(ServerConfig(db=store_url, master_key_file=old_key_file), existing)
    assert existing.read_text() == "keep me\n"
    assert {c.key_id: c.sealed_secret for c in Engine(store).credentials(None)} == before


def test_the_command_rotates_a_sqlite_database_beside_its_key_file(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'd.db'}"
    runner = CliRunner()
    made = runner.invoke(main, ["credentials", "create-operator", "--db", db, "--json"])
    assert made.exit_code == 0, made.output
    new_key_file = tmp_path / "new.key"
    args = ["credentials", "rotate-master-key", "--db", db, "--new-key-file", str(new_key_file)]
    rotated = runner.invoke(main, args)
    assert rotated.exit_code == 0, rotated.output
    assert "re-sealed 1 credential" in rotated.output
    assert "new key" in rotated.output
    again = runner.invoke(main, args)
    assert again.exit_code == 1 and "already exists" in again.output


def test_a_mistyped_sqlite_path_is_refused_and_creates_nothing(
    tmp_path: Path, old_key_file: Path
) -> None:
    missing = tmp_path / "typo.db"
    config = ServerConfig(db=f"sqlite:///{missing}", master_key_file=old_key_file)
    with pytest.raises(OfflineSetupError, match="No database at"):
        rotate_master_key(config, tmp_path / "new.key")
    assert not missing.exists() and not (tmp_path / "new.key").exists()
