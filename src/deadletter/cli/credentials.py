"""`deadletter credentials ...`: issue, list, rotate and revoke credentials through a running
server's admin API, and `create-operator`, which works on the database itself to make the
first operator credential (there is nobody yet to authenticate that request)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import click

from deadletter.cli.output import (
    NAMED,
    F,
    Failure,
    echo,
    json_option,
    print_json,
    print_table,
    server_options,
    when,
)
from deadletter.cli.store import store_options
from deadletter.client import DEFAULT_PROJECT, ApiError, Client
from deadletter.domain.errors import InvalidInput
from deadletter.domain.projects import check_tenant

ROLES = ["admin", "producer", "consumer", "reader", "operator"]
AUTH_OFF = (
    "this server has authentication off: every request is accepted without a credential, and"
    " credentials exist only on a server started with --auth required (docs/security.md)"
)


def needs_auth(command: F) -> F:
    """A server with authentication off has no credential routes at all; its 404 ("There is
    no resource at /v2/credentials") would leave a user thinking of a wrong URL."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except ApiError as exc:
            if exc.status == 404 and "no resource at /v2/credentials" in exc.description:
                raise Failure(AUTH_OFF) from None
            raise

    return wrapper  # type: ignore[return-value]


def tenant_option(value: str) -> str:
    """--project of a new credential, held to the server's rule for tenant names."""
    try:
        return check_tenant(value)
    except InvalidInput as exc:
        raise click.BadParameter(str(exc)) from None


@click.group()
def credentials() -> None:
    """Issue, list, rotate and revoke credentials (docs/security.md)."""


def _print_issued(doc: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(doc)
        return
    echo(f"key id:  {doc['key_id']}")
    echo(f"secret:  {doc['secret']}")
    echo(f"project: {doc['project']}  role: {doc['role']}  account: {doc['account_id']}")
    echo("The secret is shown once; keep it now.", err=True)


@credentials.command()
@click.option("--role", type=click.Choice(ROLES), required=True)
@json_option
@server_options
@needs_auth
def create(client: Client, role: str, as_json: bool) -> None:
    """Issue a credential of --project (an operator may name any; default: the caller's own
    project); its secret is printed once."""
    _print_issued(client.create_credential(role), as_json)


@credentials.command(name="list")
@click.option("--all", "every_project", is_flag=True, help="Every project's (operator only).")
@json_option
@server_options
@needs_auth
def list_(client: Client, every_project: bool, as_json: bool) -> None:
    """List the project's credentials (never their secrets)."""
    found = client.credentials(every_project)
    if as_json:
        print_json(found)
        return
    print_table(
        None,
        ["key id", "project", "role", "account", "created", "revoked"],
        (
            (c["key_id"], c["project"], c["role"], c["account_id"], _time(c), c["revoked"])
            for c in found
        ),
        empty="no credentials" + ("" if every_project else " in this project"),
    )


def _time(c: dict[str, Any]) -> str | None:
    from datetime import UTC, datetime

    return when(datetime.fromtimestamp(float(c["created_at"]), UTC).isoformat())


@credentials.command()
@click.argument("key_id", type=NAMED)
@json_option
@server_options
@needs_auth
def rotate(client: Client, key_id: str, as_json: bool) -> None:
    """Replace KEY_ID by a new key id and secret (same project and role); KEY_ID is revoked."""
    _print_issued(client.rotate_credential(key_id), as_json)


@credentials.command()
@click.argument("key_id", type=NAMED)
@server_options
@needs_auth
def revoke(client: Client, key_id: str) -> None:
    """Revoke KEY_ID: its signatures and tokens are refused from now on."""
    client.revoke_credential(key_id)
    echo(f"revoked {key_id}")


@credentials.command(name="create-operator")
@store_options
@click.option(
    "--project",
    "for_project",
    default=DEFAULT_PROJECT,
    show_default=True,
    help="The operator's own project (its SQS account).",
    callback=lambda _ctx, _param, value: tenant_option(value),
)
@json_option
def create_operator(
    db: str | None,
    data_dir: Path,
    master_key_file: Path | None,
    for_project: str,
    as_json: bool,
) -> None:
    """Make an operator credential directly in the database (run it where the server's
    database and master key are; no server needs to run)."""
    from deadletter.config import ServerConfig
    from deadletter.server import OfflineSetupError, create_operator_credential

    config = ServerConfig(db=db, data_dir=data_dir, master_key_file=master_key_file)
    try:
        credential, secret = create_operator_credential(config, for_project)
    except OfflineSetupError as exc:
        raise click.ClickException(str(exc)) from None
    doc = {
        "key_id": credential.key_id,
        "secret": secret,
        "project": credential.project,
        "role": credential.role.value,
        "account_id": credential.account_id,
    }
    _print_issued(doc, as_json)


@credentials.command(name="rotate-master-key")
@store_options
@click.option(
    "--new-key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Where to write the new master key (0600); an existing file is refused.",
)
def rotate_master_key(
    db: str | None, data_dir: Path, master_key_file: Path | None, new_key_file: Path
) -> None:
    """Re-seal every stored secret under a new master key, in one transaction (run it where
    the database and the current key are, with the servers stopped). Zaqar tokens and signed
    URLs issued under the old key stop working; key ids and secrets stay the same."""
    from deadletter.config import ServerConfig
    from deadletter.server import OfflineSetupError
    from deadletter.server import rotate_master_key as rotate

    config = ServerConfig(db=db, data_dir=data_dir, master_key_file=master_key_file)
    try:
        count = rotate(config, new_key_file)
    except OfflineSetupError as exc:
        raise click.ClickException(str(exc)) from None
    echo(f"re-sealed {count} credential(s) under the new master key in {new_key_file}")
    echo(
        "Start the server(s) with the new key only: --master-key-file"
        f" {new_key_file}, or DEADLETTER_MASTER_KEY set to its content, or (SQLite) put it in"
        " place of the key file beside the database. Servers still on the old key cannot"
        " open any secret. Keep a backup of the new key; the old one opens nothing now.",
        err=True,
    )
