"""The webhook sender the server wires in (`notifier.WebhookSender`): POSTs with httpx to an
address the destination rule has just checked.

Before every POST the subscriber's host is resolved and checked again (`Destinations.check`;
its addresses may have changed since the subscription was made), and the request goes to the
first address checked, never to the name: a name that changes its answer between the check
and the connection cannot send it elsewhere. The URL's host is kept as the `Host` header and,
over https, as the name sent in TLS and verified against the certificate. Redirects are not
followed, connections are not kept (one made for one host is never lent to another), and the
answer's body is never read: only its status counts.
"""

from __future__ import annotations

import ssl
from typing import Any

import httpx

from deadletter.domain.subscriptions import Delivery
from deadletter.engine import notifier
from deadletter.engine.destinations import (
    DestinationRefused,
    Destinations,
    DestinationUnresolved,
)
from deadletter.engine.notifier import Outcome


class HttpxSender:
    def __init__(self, destinations: Destinations, client: httpx.Client | None = None) -> None:
        self.destinations = destinations
        self._client = client or httpx.Client(
            follow_redirects=False,
            limits=httpx.Limits(max_keepalive_connections=0),
            trust_env=False,  # a proxy from the environment would connect to the name itself
        )

    def send(self, d: Delivery, timeout: float) -> Outcome:
        data, headers = notifier.request_of(d)
        try:
            addresses = self.destinations.check(d.subscriber)
        except DestinationUnresolved:
            return Outcome(False, notifier.DNS)
        except DestinationRefused:
            return Outcome(False, notifier.FORBIDDEN, final=True)
        url = httpx.URL(d.subscriber)
        extensions: dict[str, Any] = {}
        if url.scheme == "https":
            extensions["sni_hostname"] = url.host
        headers["Host"] = url.netloc.decode("ascii")
        target = url.copy_with(host=str(addresses[0]))
        try:
            with self._client.stream(
                "POST", target, content=data, headers=headers, timeout=timeout,
                extensions=extensions,
            ) as response:  # fmt: skip
                return notifier.status_outcome(response.status_code)
        except Exception as exc:  # any failure is this attempt's, recorded by its class
            return Outcome(False, failure_class(exc))

    def close(self) -> None:
        self._client.close()


def failure_class(exc: BaseException) -> str:
    """The class of a failed POST, from the exception and the ones it was raised from."""
    if isinstance(exc, httpx.TimeoutException):
        return notifier.TIMEOUT
    seen: BaseException | None = exc
    for _ in range(_CHAIN):
        if seen is None:
            break
        if isinstance(seen, ssl.SSLError | ssl.CertificateError):
            return notifier.TLS
        if isinstance(seen, ConnectionRefusedError):
            return notifier.REFUSED
        seen = seen.__cause__ or seen.__context__
    return notifier.CONNECTION


_CHAIN = 8  # httpx wraps httpcore, which wraps the socket's error: a short chain
