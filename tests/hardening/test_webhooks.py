"""Webhook subscriptions as an attacker would write them: every kind of inside address in
every spelling, and headers that would retarget or reframe the POST. Each is refused in
Zaqar's shape, makes no subscription and changes nothing of anyone else's."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.zaqar.conftest import ApiClient
from tests.engine.test_webhook_destinations import (
    forbidden_header,
    host_of,
    refused,
    refused_v4,
    spellings,
)
from tests.hardening.conftest import refused as refusal

SUBS = "/v2/queues/hooked/subscriptions"
ONCE = settings(
    deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def nothing_made(api: ApiClient) -> None:
    """No subscription, and not the queue a first subscription would have created."""
    assert api.get(SUBS).json()["subscriptions"] == []
    assert api.get("/v2/queues/hooked").status_code == 404


@st.composite
def inside_urls(draw: st.DrawFn) -> str:
    ip = draw(st.one_of(refused, refused_v4))
    host = host_of(ip)
    if isinstance(ip, ipaddress.IPv4Address):
        host = draw(st.sampled_from(spellings(ip)))
    scheme = draw(st.sampled_from(["http", "https", "HTTP"]))
    port = draw(st.sampled_from(["", ":80", ":8080", ":6379"]))
    path = draw(st.sampled_from(["/", "/latest/meta-data/", "/computeMetadata/v1/"]))
    return f"{scheme}://{host}{port}{path}"


@ONCE
@given(url=inside_urls())
def test_no_inside_destination_is_subscribed(
    api: ApiClient, untouched: Callable[[], None], url: str
) -> None:
    r = api.post(SUBS, json={"subscriber": url, "ttl": 600})
    refusal(r, 400, "webhooks may not reach")
    nothing_made(api)
    untouched()


@ONCE
@given(name=forbidden_header)
def test_no_subscription_retargets_or_reframes_its_post(
    api: ApiClient, untouched: Callable[[], None], name: str
) -> None:
    options = {"post_headers": {name: "169.254.169.254", "Metadata-Flavor": "Google"}}
    r = api.post(SUBS, json={"subscriber": "http://hooks.example/", "ttl": 600,
                             "options": options})  # fmt: skip
    refusal(r, 400, name)
    nothing_made(api)
    untouched()
