"""Who sees a subscription's header values: the roles that may make subscriptions; any other
role that may read them sees the header names with the values redacted."""

from __future__ import annotations

import pytest

from deadletter.api.zaqar.subscriptions import REDACTED
from deadletter.auth.roles import Action, Role, allowed
from deadletter.storage.base import Store
from tests.auth.live import live_server, zaqar

HEADERS = {"X-Token": "s3cret", "Authorization": "Bearer abc"}
SUBS = "/v2/queues/jobs/subscriptions"


@pytest.mark.parametrize("role", list(Role))
def test_header_values_are_shown_only_to_roles_that_may_subscribe(store: Store, role: Role) -> None:
    with live_server(store) as live:
        admin, admin_secret = live.issue("alpha", "admin")
        made = zaqar(live.url, "POST", SUBS, token=f"{admin.key_id}:{admin_secret}",
                     json={"subscriber": "http://hooks.example/a", "ttl": 600,
                           "options": {"post_headers": HEADERS, "k": 1}})  # fmt: skip
        assert made.status_code == 201, made.text
        sid = made.json()["subscription_id"]
        credential, secret = live.issue("alpha", role.value)
        token = f"{credential.key_id}:{secret}"
        one = zaqar(live.url, "GET", f"{SUBS}/{sid}", token=token, project="alpha")
        listed = zaqar(live.url, "GET", SUBS, token=token, project="alpha")
    if not allowed(role, Action.SUBSCRIPTION_READ):
        assert (one.status_code, listed.status_code) == (403, 403)
        return
    assert (one.status_code, listed.status_code) == (200, 200)
    (item,) = listed.json()["subscriptions"]
    expected = (
        HEADERS if allowed(role, Action.SUBSCRIPTION_MANAGE) else dict.fromkeys(HEADERS, REDACTED)
    )
    for shown in (one.json()["options"], item["options"]):
        assert shown == {"post_headers": expected, "k": 1}
    if expected != HEADERS:
        assert "s3cret" not in one.text + listed.text
