"""Adversarial: a tenant named like another tenant's derived project.

A region's queues belong to the project `<tenant>@<region>`; a tenant of exactly that name
would own them. Generated names (the separator, its Unicode look-alikes, dots, case, letters
of other scripts) go through every door a project name comes in by: a new credential, the
X-Project-ID header, and the command line. A name that is let in can never be a derived
project, and a credential stored before the rule existed can do nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from botocore.exceptions import ClientError
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deadletter.api.app import build_app
from deadletter.auth.credentials import MasterKey, issue
from deadletter.cli.main import main
from deadletter.domain import errors
from deadletter.engine.credentials import Authority, Role, insert
from deadletter.engine.engine import Engine
from deadletter.storage.base import Store
from tests.auth.live import CLIENT_ID, Live, boto, live_server, zaqar
from tests.support.servers import serving

HOME = "us-east-1"
REGIONS = ["eu-west-1", "ap-southeast-2", "us-gov-west-1", "xx-yyy-9"]
# The separator, what looks like it, and letters that look like ASCII ones.
LOOK_ALIKES = "@\uff20\ufe6b\uff0e\u0430\u0435\u043e\u0440\u0441\u0131\u212a\u00a0\u200b\x00 /:#"
names = st.text(alphabet=st.sampled_from("aAzZ09._-" + LOOK_ALIKES), min_size=0, max_size=24)
derived = st.builds(
    lambda tenant, region: f"{tenant}@{region}",
    st.sampled_from(["proja", "ProjA", "p.q", "123456789012"]),
    st.sampled_from(REGIONS),
)


def _derivable(name: str) -> bool:
    """Whether `name` is, or looks like, a project derived from some tenant's name."""
    return any(c in name for c in LOOK_ALIKES[:3]) or not name.isascii()


@pytest.fixture
def live(store: Store) -> Iterator[Live]:
    with live_server(store) as server:
        yield server


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.one_of(names, derived))
def test_no_credential_is_issued_to_a_name_a_derivation_could_take(
    engine: Engine, name: str
) -> None:
    authority = Authority(engine, MasterKey.generate())
    try:
        credential, _ = authority.create(name, Role.ADMIN)
    except errors.InvalidInput:
        return
    assert not _derivable(credential.project), credential.project
    assert credential.project.isascii() and credential.project


@pytest.mark.parametrize("region", REGIONS)
def test_an_operator_cannot_create_a_tenant_named_like_a_region_project(
    live: Live, region: str
) -> None:
    operator, secret = live.issue("ops", "operator")
    token = f"{operator.key_id}:{secret}"
    for project in (f"proja@{region}", f"proja\uff20{region}", f"proja\ufe6b{region}"):
        made = zaqar(
            live.url, "POST", "/v2/credentials", token=token,
            json={"project": project, "role": "admin"},
        )  # fmt: skip
        assert made.status_code == 400, (project, made.text)
        assert "project" in made.json()["description"]


def test_a_credential_stored_under_a_derived_name_reaches_nothing(live: Live) -> None:
    # Given proja's queue in eu-west-1, and a credential stored (before the rule) for the
    # project that holds it
    owner, owner_secret = live.issue("proja", "admin")
    boto(live.url, owner.key_id, owner_secret, region="eu-west-1").create_queue(QueueName="vs")
    stolen, secret = issue(live.authority.master, "proja@eu-west-1", Role.ADMIN, 0.0)
    live.engine.add_credential(lambda tx: insert(tx, stolen))
    # When it lists the queues on either face, it is refused
    with pytest.raises(ClientError) as exc:
        boto(live.url, stolen.key_id, secret).list_queues()
    assert exc.value.response["Error"]["Code"] == "AccessDenied"
    listed = zaqar(live.url, "GET", "/v2/queues", token=f"{stolen.key_id}:{secret}")
    assert listed.status_code == 403
    # while an operator still sees it and can revoke it
    operator, op_secret = live.issue("ops", "operator")
    op = f"{operator.key_id}:{op_secret}"
    assert zaqar(live.url, "DELETE", f"/v2/credentials/{stolen.key_id}", token=op).is_success


def test_x_project_id_is_a_tenant_or_a_tenant_at_a_region(engine: Engine) -> None:
    with serving(build_app(engine)) as url, httpx.Client(base_url=url) as client:

        @settings(max_examples=80, deadline=None)
        @given(name=names.filter(lambda n: n.strip(" ") == n != "" and "\x00" not in n))
        def check(name: str) -> None:
            for project in (name, f"{name}@{REGIONS[0]}", f"{name}@{name}"):
                r = client.get(
                    "/v2/queues",
                    headers=[
                        (b"Client-ID", CLIENT_ID.encode()),
                        (b"X-Project-ID", project.encode()),
                    ],
                )
                valid = name.isascii() and all(c.isalnum() or c in "._-" for c in name)
                if valid and project != f"{name}@{name}":
                    assert r.status_code == 200, (project, r.text)
                else:
                    assert r.status_code == 400, (project, r.status_code)

        check()


@pytest.mark.parametrize("project", ["proja@eu-west-1", "proj\u0430", "a b", ""])
def test_the_command_line_refuses_such_an_operator_project(tmp_path: Path, project: str) -> None:
    db = f"sqlite:///{tmp_path / 'd.db'}"
    result = CliRunner().invoke(
        main, ["credentials", "create-operator", "--db", db, "--project", project]
    )
    assert result.exit_code == 2, result.output
    assert "project" in result.output.lower()
    assert not (tmp_path / "d.db").exists()  # refused before the database was opened
