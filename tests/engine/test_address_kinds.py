"""The kind a refused webhook address is named by (`address_kind`), which a subscriber reads
in the refusal ("resolves to a loopback address"): loopback and unspecified addresses in
every spelling that carries them, and their public neighbours named by none."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deadletter.engine.destinations import (
    DestinationRefused,
    Destinations,
    address_kind,
)

V4 = ipaddress.IPv4Address
V6 = ipaddress.IPv6Address

# The IPv6 spellings that carry an IPv4 address: IPv4-mapped, 6to4, NAT64 (well-known and
# local-use prefixes).
CARRIERS: dict[str, Callable[[V4], V6]] = {
    "mapped": lambda a: V6(f"::ffff:{a}"),
    "6to4": lambda a: V6((0x2002 << 112) | (int(a) << 80)),
    "nat64": lambda a: V6(f"64:ff9b::{a}"),
    "nat64-local": lambda a: V6(f"64:ff9b:1::{a}"),
}

loopback_v4 = st.integers(0, 2**24 - 1).map(lambda i: V4((127 << 24) | i))


@settings(deadline=None)
@given(loopback_v4)
def test_every_127_address_is_loopback(ip: V4) -> None:
    assert address_kind(ip) == "loopback"


@settings(deadline=None)
@given(loopback_v4, st.sampled_from(list(CARRIERS)))
def test_a_loopback_address_carried_in_ipv6_is_loopback(ip: V4, carrier: str) -> None:
    assert address_kind(CARRIERS[carrier](ip)) == "loopback"


KINDS: list[tuple[str, str | None]] = [
    ("::1", "loopback"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.255", "loopback"),
    ("::ffff:127.0.0.1", "loopback"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("::ffff:0.0.0.0", "unspecified"),
    # the neighbours of 127.0.0.0/8 and of ::1 are not loopback
    ("126.255.255.255", None),
    ("128.0.0.1", None),
    ("::ffff:128.0.0.1", None),
    ("::2", "reserved"),
]


@pytest.mark.parametrize(("text", "kind"), KINDS)
def test_the_kind_of_an_address(text: str, kind: str | None) -> None:
    assert address_kind(ipaddress.ip_address(text)) == kind


@pytest.mark.parametrize("answer", ["127.0.0.1", "::1", "::ffff:127.0.0.2", "127.1.2.3"])
def test_a_refusal_names_loopback(answer: str) -> None:
    def resolve(host: str, port: int) -> list[str]:
        return [answer]

    with pytest.raises(DestinationRefused) as refused:
        Destinations(resolve=resolve).check("http://receiver.example/hook")
    assert refused.value.kind == "loopback"
