"""Webhook delivery: one notification POSTed to one subscriber, in the shape Zaqar sends.

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
from dataclasses import dataclass
from typing import Any

import httpx

from deadletter.domain.subscriptions import Delivery

# The substitution Zaqar makes in `post_data`.
MESSAGE_PLACEHOLDER = '"$zaqar_message$"'
RETRYABLE_CLIENT_ERRORS = frozenset({408, 429})


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to; `error` is the last HTTP status or the connection error."""

    ok: bool
    error: str | None = None
    final: bool = False


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
    """The body and headers of the POST, with the subscription's options applied."""
    message = d.body.decode() if d.is_confirmation_request else json.dumps(notification(d))
    template = d.options.get("post_data")
    data = template.replace(MESSAGE_PLACEHOLDER, message) if isinstance(template, str) else message
    headers = {"Content-Type": "application/json"}
    extra = d.options.get("post_headers")
    if isinstance(extra, dict):
        headers.update({k: v for k, v in extra.items() if isinstance(v, str)})
    return data.encode(), headers


def post(client: httpx.Client, d: Delivery, timeout: float) -> Outcome:
    data, headers = request_of(d)
    try:
        response = client.post(d.subscriber, content=data, headers=headers, timeout=timeout)
    except Exception as exc:  # any failure is this attempt's error, recorded
        return Outcome(False, f"{type(exc).__name__}: {exc}".rstrip(": "))
    status = response.status_code
    if 200 <= status < 300:
        return Outcome(True)
    final = 400 <= status < 500 and status not in RETRYABLE_CLIENT_ERRORS
    return Outcome(False, f"HTTP {status}", final)
