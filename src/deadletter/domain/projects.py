"""Project names: what a tenant may be called and the projects derived from a tenant's name.

A tenant's SQS queues of a region other than the server's home region live in the derived
project `<tenant>@<region>` (`regional`). A tenant's own name can therefore never contain the
separator `@`, or one tenant could be named exactly as another's derived project and reach its
queues. Tenant names are held to a short ASCII alphabet rather than merely refused an `@`:
nothing that looks like a separator (full-width U+FF20, small U+FE6B) or like another
tenant's letters (Cyrillic U+0430 for Latin `a`) can be a name, so a name read on a screen is
the name stored.
Names are case-sensitive (`ProjA` and `proja` are two tenants), as they always were.
"""

from __future__ import annotations

from deadletter.domain import names
from deadletter.domain.errors import InvalidInput

MAX_TENANT = 256
SEPARATOR = "@"  # in names.PROJECT's pattern too


def is_tenant(name: str) -> bool:
    return names.TENANT.valid(name)


def check_tenant(name: str, what: str = "A project") -> str:
    """`name` if it may name a tenant (a credential's project, an operator's own); else
    InvalidInput saying what is allowed."""
    if not is_tenant(name):
        raise InvalidInput(
            f"{what} is 1 to {MAX_TENANT} ASCII letters, digits, '_', '-' or '.'; "
            f"'{SEPARATOR}' is kept for the projects derived from a tenant's name."
        )
    return name


def is_project(name: str) -> bool:
    """Whether `name` is a tenant or one of a tenant's derived projects."""
    return names.PROJECT.valid(name)


def check_project(name: str, what: str = "X-Project-ID") -> str:
    """`name` if it names a tenant or a tenant's derived project (`<tenant>@<region>`, the
    native face's way to a region's queues); else InvalidInput."""
    if not is_project(name):
        raise InvalidInput(
            f"{what} is a project name (1 to {MAX_TENANT} ASCII letters, digits, '_', '-' or "
            f"'.'), optionally followed by '{SEPARATOR}<region>'."
        )
    return name


def regional(tenant: str, region: str, home: str) -> str:
    """The project holding one region's queues of a tenant: the tenant itself for the server's
    home region, `<tenant>@<region>` for any other, so that a queue of one region is never one
    of another (docs/sqs.md)."""
    return tenant if region == home else f"{tenant}{SEPARATOR}{region}"


def tenant_of(project: str) -> str:
    """The tenant a project belongs to: itself, or the tenant it was derived from."""
    return project.partition(SEPARATOR)[0]
