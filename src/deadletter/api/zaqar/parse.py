"""Zaqar request values parsed into the domain's typed, bounded values before any write."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from deadletter.api.zaqar import metadata as meta
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.errors import ZaqarError, bad_request
from deadletter.api.zaqar.serialize import encode_body
from deadletter.domain.model import (
    MAX_CLAIM_TTL,
    MAX_DELAY,
    MAX_TTL,
    Attribute,
    NewMessage,
    Reason,
)

PAGE_LIMIT = 20


def parse_time(name: str, text: str | None) -> float | None:
    """ISO 8601 (a naive one is UTC) or epoch seconds."""
    if text is None or text == "":
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise bad_request(
            f"{name} must be an ISO 8601 time or epoch seconds, not {text!r}."
        ) from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def new_message(doc: Any) -> NewMessage:
    if not isinstance(doc, dict) or "body" not in doc:
        raise bad_request('Each message must be a JSON object with a "body".')
    ttl = doc.get("ttl")
    if ttl is not None and (
        isinstance(ttl, bool) or not isinstance(ttl, int) or not meta.MIN_TTL <= ttl <= MAX_TTL
    ):
        raise bad_request(
            f"The TTL for a message may not exceed {MAX_TTL} seconds, and must be"
            f" at least {meta.MIN_TTL} seconds long, not {ttl!r}."
        )
    delay = doc.get("delay")
    if delay is not None and (
        isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= MAX_DELAY
    ):
        raise bad_request(f"The delay of a message must be between 0 and {MAX_DELAY} seconds.")
    eligible = doc.get("dead_letter_eligible")
    if eligible is not None and not isinstance(eligible, bool):
        raise bad_request("dead_letter_eligible must be true or false.")
    # FIFO queues: the message group and deduplication ids (the engine checks them).
    group_id, dedup_id = doc.get("group_id"), doc.get("deduplication_id")
    if not all(v is None or isinstance(v, str) for v in (group_id, dedup_id)):
        raise bad_request("group_id and deduplication_id must be strings.")
    return NewMessage(
        body=encode_body(doc["body"]),
        ttl=ttl,
        delay=delay,
        attributes=attributes(doc.get("attributes")),
        dead_letter_eligible=eligible,
        group_id=group_id,
        deduplication_id=dedup_id,
    )


def attributes(raw: Any) -> dict[str, Attribute]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise bad_request('attributes must be an object of {name: {"type", "value"}}.')
    out = {}
    for name, a in raw.items():
        if not (isinstance(a, dict) and isinstance(a.get("type"), str)):
            raise bad_request(f'attribute {name!r} needs a "type" and a string "value".')
        value = a.get("value")
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise bad_request(f'attribute {name!r} needs a "type" and a string "value".')
        out[name] = Attribute(a["type"], value)
    return out


def message_ids(ctx: Ctx) -> list[str]:
    ids = [i for i in ctx.params.get("ids", "").split(",") if i]
    if not ids:
        raise bad_request("ids must list at least one message id.")
    if len(ids) > PAGE_LIMIT:
        raise bad_request(f"No more than {PAGE_LIMIT} message ids at once.")
    return ids


def claim_times(doc: dict[str, Any], ttl: int | None, grace: int | None) -> tuple[Any, Any]:
    for key in ("ttl", "grace"):
        value = doc.get(key)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not meta.MIN_TTL <= value <= MAX_CLAIM_TTL
        ):
            raise bad_request(
                f"The {key} for a claim must be between {meta.MIN_TTL} and {MAX_CLAIM_TTL}"
                f" seconds, not {value!r}."
            )
    # null means "the default", as python-zaqarclient sends it for an unset grace.
    return (
        ttl if doc.get("ttl") is None else doc["ttl"],
        grace if doc.get("grace") is None else doc["grace"],
    )


def required_claim_id(ctx: Ctx) -> str:
    claim_id = ctx.params.get("claim_id")
    if not claim_id:
        raise ZaqarError(403, "Claim required", "Give claim_id: only the claim holder may.")
    return claim_id


def optional_text(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise bad_request(f"{key} must be a string.")
    return value


def reason_value(value: Any) -> Reason | None:
    if value is None or value == "":
        return None
    try:
        return Reason(value)
    except ValueError:
        raise bad_request(
            f"reason must be one of {', '.join(r.value for r in Reason)}, not {value!r}."
        ) from None


def time_value(name: str, value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if value is None or isinstance(value, str):
        return parse_time(name, value)
    raise bad_request(f"{name} must be an ISO 8601 time or epoch seconds.")


def patch_op(op: Any) -> tuple[str, Any]:
    if not isinstance(op, dict) or op.get("op") not in ("add", "replace", "remove"):
        raise bad_request('Each patch operation needs "op": add, replace or remove.')
    path = op.get("path")
    prefix = "/metadata/"
    if not isinstance(path, str) or not path.startswith(prefix) or len(path) == len(prefix):
        raise bad_request('Each patch operation needs "path": "/metadata/<key>".')
    if op["op"] != "remove" and "value" not in op:
        raise bad_request(f'The {op["op"]} operation needs a "value".')
    return path[len(prefix) :], op.get("value")
