"""Webhook delivery: what one notification POSTs to one subscriber, in the shape Zaqar
sends, and the interface of the sender that POSTs it (`WebhookSender`; the engine imports no
HTTP client).

Zaqar's notifier posts each message as `{"body", "ttl", "queue_name", "Message_Type":
"Notification"}` with `Content-Type: application/json`, honours the subscription's
`post_headers` and `post_data` options (`"$zaqar_message$"` in `post_data` stands for the
notification), and takes any answer below 500 as delivered. Here only a 2xx answer is: a
5xx, a timeout or a connection error is tried again, and a 4xx other than 408 or 429 fails at
once (the subscriber refused it; repeating it would not help), so it reaches the DLQ without
waiting for the retries.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Protocol

from deadletter.domain import errors
from deadletter.domain.subscriptions import Delivery

# The substitution Zaqar makes in `post_data`.
MESSAGE_PLACEHOLDER = '"$zaqar_message$"'
RETRYABLE_CLIENT_ERRORS = frozenset({408, 429})

# What a failed attempt records, the class of failure and never the remote text: a
# subscriber's error page (or a refused port's message) must not come back to whoever made
# the subscription. "HTTP <status>" is the other class.
TIMEOUT = "timeout"
REFUSED = "refused"  # the connection was refused
DNS = "dns"  # the host does not resolve
TLS = "tls"  # the TLS handshake or the certificate failed
CONNECTION = "connection"  # reset, closed early, or any other network or protocol failure
FORBIDDEN = "forbidden destination"  # resolves to an address webhooks may not reach

# Headers a subscription may not set: the sender owns the request's framing and its target.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"}
)
OWNED = frozenset({"host", "content-length"})
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VALUE = re.compile(r"[\t\x20-\x7e]*")


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to; `error` is its class of failure (above)."""

    ok: bool
    error: str | None = None
    final: bool = False


class WebhookSender(Protocol):
    """What the engine needs to deliver a notification; the server wires in the HTTP one
    (`deadletter.adapters.webhooks`)."""

    def send(self, d: Delivery, timeout: float) -> Outcome: ...

    def close(self) -> None: ...


def status_outcome(status: int) -> Outcome:
    """Only a 2xx is delivered; a 4xx other than 408 or 429 is final."""
    if 200 <= status < 300:
        return Outcome(True)
    final = 400 <= status < 500 and status not in RETRYABLE_CLIENT_ERRORS
    return Outcome(False, f"HTTP {status}", final)


def header_refusal(name: str, value: object) -> str | None:
    """Why a subscription may not send the header `name: value`; None when it may."""
    lowered = name.lower()
    if not _TOKEN.fullmatch(name):
        return f"{name!r} is not a header name"
    if lowered in OWNED or lowered in HOP_BY_HOP or lowered.startswith("proxy-"):
        return f"the header {name} is set by the server, not by a subscription"
    if not isinstance(value, str) or not _VALUE.fullmatch(value):
        return f"the value of {name} must be a string of printable ASCII characters"
    return None


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """InvalidInput for `post_headers` that are not an object of allowed headers."""
    headers = options.get("post_headers")
    if headers is None:
        return options
    if not isinstance(headers, dict):
        raise errors.InvalidInput("post_headers must be an object of header names to values")
    for name, value in headers.items():
        if (why := header_refusal(name, value)) is not None:
            raise errors.InvalidInput(f"post_headers: {why}")
    return options


def decoded(body: bytes) -> Any:
    """The body as JSON when the message is JSON (a Zaqar message), else its text."""
    try:
        return json.loads(body)
    except ValueError:
        return body.decode("utf-8", errors="replace")


def notification(d: Delivery) -> dict[str, Any]:
    return {
        "body": decoded(d.body),
        "ttl": d.ttl,
        "queue_name": d.queue,
        "Message_Type": "Notification",
    }


def request_of(d: Delivery) -> tuple[bytes, dict[str, str]]:
    """The body and headers of the POST, with the subscription's options applied (headers
    refused at creation are left out here too, for subscriptions stored before the rule)."""
    message = d.body.decode() if d.is_confirmation_request else json.dumps(notification(d))
    template = d.options.get("post_data")
    data = template.replace(MESSAGE_PLACEHOLDER, message) if isinstance(template, str) else message
    headers = {"Content-Type": "application/json"}
    extra = d.options.get("post_headers")
    if isinstance(extra, dict):
        headers.update({k: v for k, v in extra.items() if header_refusal(k, v) is None})
    return data.encode(), headers
