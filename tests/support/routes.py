"""The Zaqar route table by (method, path template), as tests look a route up."""

from __future__ import annotations

from collections.abc import Mapping

from deadletter.api.zaqar.routes import ROUTES, ZaqarRoute
from deadletter.auth.roles import Action, as_get

BY_TEMPLATE: dict[tuple[str, str], ZaqarRoute] = {(r.method, r.path): r for r in ROUTES}


def zaqar_action(method: str, template: str, params: Mapping[str, str]) -> Action | None:
    """The action a Zaqar request needs (HEAD's is GET's), None for a public route; KeyError
    for a route the table does not have."""
    return BY_TEMPLATE[(as_get(method), template)].action_for(params)
