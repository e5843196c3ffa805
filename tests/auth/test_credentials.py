"""Credentials and the master key: key ids, account ids, sealing, the key file."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from deadletter.auth.credentials import (
    MASTER_KEY_ENV,
    MasterKey,
    account_id_for,
    issue,
    key_file_beside,
    load_master_key,
    new_key_id,
    reseal,
    seal_secret,
    unseal_secret,
)
from deadletter.auth.errors import MasterKeyError
from deadletter.auth.roles import Action, Role


def test_key_ids_look_like_aws_access_keys() -> None:
    ids = {new_key_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"DLAK[A-Z2-7]{16}", k) for k in ids)


def test_account_ids_are_twelve_digits_and_stable() -> None:
    assert re.fullmatch(r"\d{12}", account_id_for("team-a"))
    assert account_id_for("team-a") == account_id_for("team-a")
    assert account_id_for("team-a") != account_id_for("team-b")
    assert account_id_for("123456789012") == "123456789012"


def test_issue_returns_the_secret_once_and_keeps_it_sealed() -> None:
    master = MasterKey.generate()
    credential, secret = issue(master, "team-a", Role.PRODUCER, now=1000.0)
    assert secret not in credential.sealed_secret
    assert len(secret) >= 40
    assert master.unseal(credential.sealed_secret, credential.key_id) == secret
    assert credential.account_id == account_id_for("team-a")
    assert credential.may(Action.MESSAGE_SEND, "team-a")
    assert not credential.may(Action.MESSAGE_SEND, "team-b")
    assert not credential.revoke().may(Action.MESSAGE_SEND, "team-a")


def test_seal_round_trip() -> None:
    master = MasterKey.generate()
    sealed = seal_secret(master, "s3cret", "DLAKAAAA")
    assert unseal_secret(master, sealed, "DLAKAAAA") == "s3cret"
    assert seal_secret(master, "s3cret", "DLAKAAAA") != sealed  # a fresh nonce each time


def test_wrong_master_key_fails() -> None:
    sealed = seal_secret(MasterKey.generate(), "s3cret", "DLAKAAAA")
    with pytest.raises(MasterKeyError):
        unseal_secret(MasterKey.generate(), sealed, "DLAKAAAA")


def test_tampered_sealed_secret_fails() -> None:
    master = MasterKey.generate()
    sealed = seal_secret(master, "s3cret", "DLAKAAAA")
    flipped = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    with pytest.raises(MasterKeyError):
        unseal_secret(master, flipped, "DLAKAAAA")


def test_sealed_secret_moved_to_another_key_id_fails() -> None:
    master = MasterKey.generate()
    sealed = seal_secret(master, "s3cret", "DLAKAAAA")
    with pytest.raises(MasterKeyError):
        unseal_secret(master, sealed, "DLAKBBBB")


def test_reseal_moves_a_secret_to_a_new_master_key() -> None:
    old, new = MasterKey.generate(), MasterKey.generate()
    moved = reseal(old, new, old.seal("s3cret", "K"), "K")
    assert new.unseal(moved, "K") == "s3cret"


def test_derived_keys_differ_by_purpose() -> None:
    master = MasterKey.generate()
    assert master.token_key != master.signed_url_key
    assert MasterKey.from_text(master.to_text()).token_key == master.token_key


def test_key_file_is_created_0600_and_read_back(tmp_path: Path) -> None:
    path = key_file_beside(tmp_path / "deadletter.db")
    assert path == tmp_path / "deadletter.db.key"
    first = load_master_key(path, environ={})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = load_master_key(path, environ={})
    assert again.to_text() == first.to_text()


def test_key_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deadletter.db.key"
    load_master_key(path, environ={})
    os.chmod(path, 0o644)
    with pytest.raises(MasterKeyError, match="chmod 600"):
        load_master_key(path, environ={})


def test_environment_wins_over_the_key_file(tmp_path: Path) -> None:
    key = MasterKey.generate()
    loaded = load_master_key(tmp_path / "k", environ={MASTER_KEY_ENV: key.to_text()})
    assert loaded.to_text() == key.to_text()
    assert not (tmp_path / "k").exists()


def test_no_key_and_no_file_is_an_error() -> None:
    with pytest.raises(MasterKeyError):
        load_master_key(None, environ={})


def test_missing_file_without_create_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(MasterKeyError):
        load_master_key(tmp_path / "absent.key", environ={}, create=False)


def test_a_key_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(MasterKeyError):
        MasterKey.from_text("c2hvcnQ")
