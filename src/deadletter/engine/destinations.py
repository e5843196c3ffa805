"""Where a webhook may be sent: the one rule, used when a subscription is made or changed and
again by the sender before every POST (a name's addresses can change in between).

A destination's host is resolved, and every address it resolves to must be public: loopback,
private (RFC 1918, IPv6 unique-local), link-local (cloud metadata at 169.254.169.254),
shared (carrier-grade NAT), multicast, reserved, documentation and unspecified addresses are
refused, and so are IPv6 addresses that carry such an IPv4 address (IPv4-mapped, 6to4,
NAT64), unless the operator allows their network (`serve --webhook-allow CIDR`). Odd
spellings of an address (`2130706433`, `0x7f.1`, `0177.0.0.1`) are resolved as the system
resolver reads them, which is what a connection would reach; the sender then connects to an
address it checked, never to the name again.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# The host's addresses as texts, for (host, port); socket.gaierror when it has none.
Resolver = Callable[[str, int], Sequence[str]]

_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
_UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class DestinationRefused(Exception):
    """The destination resolves to an address webhooks may not reach."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class DestinationUnresolved(Exception):
    """The destination's host does not resolve (now)."""


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def address_kind(ip: IPAddress) -> str | None:
    """The kind of address `ip` is when webhooks may not reach it; None when it is public."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and (ip in _NAT64 or ip in _NAT64_LOCAL):
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.ipv4_mapped is not None:
            return address_kind(ip.ipv4_mapped)
        if embedded is not None and (kind := address_kind(embedded)) is not None:
            return kind
        if ip in _NAT64_LOCAL:
            return "reserved"
    kinds = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("unique-local", isinstance(ip, ipaddress.IPv6Address) and ip in _UNIQUE_LOCAL),
        ("site-local", isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local),
        ("shared", isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved or not ip.is_global),
    )
    return next((kind for kind, matches in kinds if matches), None)


def parse_networks(texts: Iterable[str]) -> tuple[Network, ...]:
    """`--webhook-allow` values as networks; ValueError names the one that is not a CIDR."""
    out = []
    for text in texts:
        try:
            out.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{text!r} is not an IP network (CIDR such as 10.0.0.0/8)") from None
    return tuple(out)


class Destinations:
    """The rule, with the networks the operator allows and the resolver to use."""

    def __init__(
        self, allow: Iterable[str | Network] = (), resolve: Resolver = system_resolver
    ) -> None:
        self.allow = tuple(a if not isinstance(a, str) else parse_networks([a])[0] for a in allow)
        self.resolve = resolve

    def allowed(self, ip: IPAddress) -> bool:
        mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
        if any(ip in net or (mapped is not None and mapped in net) for net in self.allow):
            return True
        return address_kind(ip) is None

    def check(self, url: str) -> tuple[IPAddress, ...]:
        """The addresses `url` may be sent to, every one of its host's; DestinationRefused if
        any is refused (a name that answers with a public and a private address could hand
        out either), DestinationUnresolved if the host has none."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower(), 80)
        try:
            texts = self.resolve(host, port)
        except (OSError, UnicodeError) as exc:  # socket.gaierror, an unencodable name
            raise DestinationUnresolved(host) from exc
        if not texts:
            raise DestinationUnresolved(host)
        found: list[IPAddress] = []
        for text in texts:
            try:
                ip = ipaddress.ip_address(text.split("%", 1)[0])
            except ValueError:
                raise DestinationRefused("unreadable") from None
            if not self.allowed(ip):
                raise DestinationRefused(address_kind(ip) or "reserved")
            found.append(ip)
        return tuple(found)
