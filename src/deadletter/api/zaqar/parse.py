"""Zaqar request values parsed into the domain's typed, bounded values before any write."""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from deadletter.api import strict_json
from deadletter.api.zaqar import metadata as meta
from deadletter.api.zaqar.context import Ctx
from deadletter.api.zaqar.errors import ZaqarError, bad_request, out_of_range, shown
from deadletter.api.zaqar.reads import MESSAGE_FIELDS
from deadletter.api.zaqar.serialize import encode_body
from deadletter.domain import errors, filters, names
from deadletter.domain import settings as declared
from deadletter.domain.limits import MESSAGES_PER_REQUEST
from deadletter.domain.model import MAX_DELAY, MAX_TTL, Attribute, NewMessage
from deadletter.domain.provenance import ErrorDetails
from deadletter.domain.redrive import DEFAULT_CANARY_WATCH, Canary

PAGE_LIMIT = MESSAGES_PER_REQUEST
# Times a client may give (epoch seconds): from 1970 to the year 5138, which every datetime,
# every store and every later answer can hold.
MAX_EPOCH = 1e11
# The most message ids a redrive may list.
MAX_REDRIVE_IDS = 10_000
# The fastest a redrive may go, in messages per second.
MAX_RATE = 1e6


def known_fields(doc: dict[str, Any], known: Collection[str], what: str = "field") -> None:
    """Refuse the first key of `doc` that is not in `known` (the faces' one rule, in
    `strict_json.unknown_name`): a field nobody reads would be ignored without a word."""
    refused = strict_json.unknown_name(doc, known, what)
    if refused is not None:
        raise bad_request(refused)


def text(name: str, value: str) -> str:
    """A string that reaches the store as it is: NUL cannot be stored in PostgreSQL text."""
    if "\x00" in value:
        raise bad_request(f"{name} may not contain NUL characters.")
    return value


def epoch(name: str, value: float) -> float:
    if not (math.isfinite(value) and 0 <= value <= MAX_EPOCH):
        raise bad_request(f"{name} must be a time between 1970 and epoch {MAX_EPOCH:.0f} seconds.")
    return value


def parse_time(name: str, text: str | None) -> float | None:
    """ISO 8601 (a naive one is UTC) or epoch seconds."""
    if text is None or text == "":
        return None
    try:
        return epoch(name, float(text))
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise bad_request(
            f"{name} must be an ISO 8601 time or epoch seconds, not {text[:40]!r}."
        ) from None
    return epoch(name, (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp())


def new_message(doc: Any, floor: int = meta.MIN_TTL) -> NewMessage:
    """One posted message; its TTL at least `floor` (the queue's `_min_message_ttl`)."""
    if not isinstance(doc, dict) or "body" not in doc:
        raise bad_request('Each message must be a JSON object with a "body".')
    known_fields(doc, MESSAGE_FIELDS, "message field")
    ttl = doc.get("ttl")
    if ttl is not None and not is_int_in(ttl, floor, MAX_TTL):
        raise out_of_range("The ttl of a message", floor, MAX_TTL, ttl, " seconds")
    delay = doc.get("delay")
    if delay is not None and not is_int_in(delay, 0, MAX_DELAY):
        raise out_of_range("The delay of a message", 0, MAX_DELAY, delay, " seconds")
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


def is_int(value: Any) -> bool:
    """An integer as JSON spells one (`true` is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_int_in(value: Any, low: int, high: int) -> bool:
    return is_int(value) and low <= value <= high


def attributes(raw: Any) -> dict[str, Attribute]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise bad_request('attributes must be an object of {name: {"type", "value"}}.')
    out = {}
    for name, a in raw.items():
        if not (isinstance(a, dict) and isinstance(a.get("type"), str)):
            raise bad_request(f'attribute {name!r} needs a "type" and a string "value".')
        known_fields(a, ATTRIBUTE_FIELDS, "attribute field")
        value = a.get("value")
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise bad_request(f'attribute {name!r} needs a "type" and a string "value".')
        text("an attribute name", name)
        text("an attribute type", a["type"])
        if a["type"].split(".", 1)[0] == "Binary":
            try:
                base64.b64decode(value, validate=True)
            except ValueError:  # binascii.Error, and non-ASCII text
                raise bad_request(
                    f"The value of binary attribute {name!r} is not valid base64."
                ) from None
        out[name] = Attribute(a["type"], value)
    return out


def message_ids(ctx: Ctx) -> list[str]:
    return id_batch("ids", [i for i in ctx.params.get("ids", "").split(",") if i])


def id_batch(name: str, ids: list[str]) -> list[str]:
    """The message ids of one request: at least one, at most a page, none holding NUL."""
    if not ids:
        raise bad_request(f"{name} must list at least one message id.")
    if len(ids) > PAGE_LIMIT:
        raise bad_request(f"No more than {PAGE_LIMIT} message ids at once.")
    return [text(name, i) for i in ids]


# A claim's ttl and grace on this face: the engine's claim TTL range, narrowed to Zaqar's
# floor (a face may narrow a range, never widen it: domain/settings.py).
CLAIM_TIMES = declared.CLAIM_TTL.face_range(declared.Name("ttl", low=meta.MIN_TTL))


def claim_times(doc: dict[str, Any], ttl: int | None, grace: int | None) -> tuple[Any, Any]:
    for key in ("ttl", "grace"):
        value = doc.get(key)
        if value is not None and not is_int_in(value, *CLAIM_TIMES):
            raise out_of_range(f"The {key} of a claim", *CLAIM_TIMES, value, " seconds")
    # null means "the default", as python-zaqarclient sends it for an unset grace.
    return (
        ttl if doc.get("ttl") is None else doc["ttl"],
        grace if doc.get("grace") is None else doc["grace"],
    )


def acknowledgement(doc: dict[str, Any]) -> tuple[str, list[str]] | None:
    """A claim's `"acknowledge": {"claim_id": ..., "ids": [...]}`: the previous batch the
    consumer is done with, acknowledged in the claim's own transaction; None without one."""
    value = doc.get("acknowledge")
    if value is None:
        return None
    if isinstance(value, dict):
        known_fields(value, ("claim_id", "ids"), "acknowledge field")
    if not isinstance(value, dict) or set(value) != {"claim_id", "ids"}:
        raise bad_request('acknowledge must be {"claim_id": "...", "ids": ["...", ...]}.')
    claim_id, ids = value["claim_id"], value["ids"]
    if not isinstance(claim_id, str) or not claim_id:
        raise bad_request("acknowledge.claim_id must be a claim id.")
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        raise bad_request("acknowledge.ids must list at least one message id.")
    return text("acknowledge.claim_id", claim_id), id_batch("acknowledge.ids", ids)


def required_claim_id(ctx: Ctx) -> str:
    claim_id = ctx.params.get("claim_id")
    if not claim_id:
        raise ZaqarError(403, "Claim required", "Give claim_id: only the claim holder may.")
    return text("claim_id", claim_id)


def optional_text(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad_request(f"{key} must be a string.")
    return text(key, value)


def consumer_reason(doc: dict[str, Any]) -> str | None:
    """The consumer's own words on why it dead-letters (`"description"`, or `"reason"` as
    Azure Service Bus names them, `DeadLetter(reason, description)`). The dead letter's reason
    stays `rejected`, the one a consumer's dead-lettering has; these words are kept beside it,
    as its description: given as `reason`, they used to be dropped unseen."""
    words = optional_text(doc, "reason")
    description = optional_text(doc, "description")
    if words is not None and description is not None:
        raise bad_request(
            "reason and description are the same: the consumer's own words, kept as the dead"
            " letter's description (its reason is rejected); give one of them."
        )
    return description if words is None else words


ATTRIBUTE_FIELDS = ("type", "value")
# The fields of a structured error, as `"error": {...}` names them (Kafka Connect's context).
ERROR_FIELDS = ("class", "message", "stack")


def error_value(doc: dict[str, Any]) -> str | ErrorDetails | None:
    """`"error"`: one text, or an object of the ERROR_FIELDS, each a string; the engine
    bounds their lengths."""
    value = doc.get("error")
    if value is None or isinstance(value, str):
        return optional_text(doc, "error")
    if not isinstance(value, dict):
        raise bad_request("error must be a string or an object of class, message and stack.")
    known_fields(value, ERROR_FIELDS, "error field")
    if not value:
        raise bad_request("error must give at least one of class, message and stack.")
    fields: dict[str, str | None] = {}
    for key in ERROR_FIELDS:
        field = value.get(key)
        if field is not None and not isinstance(field, str):
            raise bad_request(f"error.{key} must be a string.")
        fields[key] = None if field is None else text(f"error.{key}", field)
    return ErrorDetails(
        message=fields["message"], error_class=fields["class"], stack=fields["stack"]
    )


def time_value(name: str, value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return epoch(name, float(value))
    if value is None or isinstance(value, str):
        return parse_time(name, value)
    raise bad_request(f"{name} must be an ISO 8601 time or epoch seconds.")


PATCH_FIELDS = ("op", "path", "value")
PATCH_OPS = ("add", "replace", "remove")  # of JSON patch (RFC 6902), those metadata takes


def patch_op(op: Any) -> tuple[str, Any]:
    if not isinstance(op, dict) or op.get("op") not in PATCH_OPS:
        raise bad_request('Each patch operation needs "op": add, replace or remove.')
    known_fields(op, PATCH_FIELDS, "patch operation field")
    path = op.get("path")
    prefix = "/metadata/"
    if not isinstance(path, str) or not path.startswith(prefix) or len(path) == len(prefix):
        raise bad_request('Each patch operation needs "path": "/metadata/<key>".')
    text("path", path)
    if op["op"] != "remove" and "value" not in op:
        raise bad_request(f'The {op["op"]} operation needs a "value".')
    return path[len(prefix) :], op.get("value")


def rate_value(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_request("rate must be a number of messages per second.")
    if not (math.isfinite(value) and 0 < value <= MAX_RATE):
        raise bad_request(
            f"rate must be more than 0 and at most {MAX_RATE:.0f} messages per second."
        )
    return float(value)


def redrive_ids(doc: dict[str, Any]) -> tuple[str, ...] | None:
    """A body's `message_ids`, None when it is left out; `null`, `[]` or a blank id is
    refused (`filters.message_ids`): it would select nothing, or fewer than were listed."""
    if "message_ids" not in doc:
        return None
    value = doc["message_ids"]
    if value is None:
        raise errors.InvalidFilter("message_ids is null; leave it out, or list message ids")
    if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
        raise bad_request("message_ids must be a list of message ids.")
    if len(value) > MAX_REDRIVE_IDS:
        raise bad_request(f"message_ids may list at most {MAX_REDRIVE_IDS} ids.")
    return filters.message_ids([text("message_ids", i) for i in value])


def tag_param(ctx: Ctx) -> str | None:
    """The `tag` selector of the claim and message operations: None for the queue's own
    (untagged) consumers."""
    value = ctx.params.get("tag")
    if value is None or value == "":
        return None
    if not names.TAG.valid(value):
        raise bad_request(f"tag must be a tag name (1-64 of A-Z a-z 0-9 - _), not {shown(value)}.")
    return value


def canary_value(doc: dict[str, Any], pattern_id: str | None) -> Canary | None:
    """A redrive's canary from its body: `canary` is a number of dead letters (an integer, or
    a string of one) or a percentage of them ("10%"); `watch` (seconds) and `max_redeath` (a
    percentage) come with it only, and so do `seed` (the draw's, an integer) and `force` (a
    pattern flagged impure too). The engine checks the ranges, before anything is written."""
    if "canary" in doc and doc["canary"] is None:
        # no documented meaning: read as "no canary", it would move the whole selection
        # unwatched, giving up the check the caller's tooling meant to ask for
        raise bad_request("canary is null: leave it out for no canary, or give its size.")
    size = doc.get("canary")
    if size is None:
        for key in ("watch", "max_redeath", "seed", "force"):
            if key in doc:
                raise bad_request(f"{key} is given with canary only.")
        return None
    count: int | None = None
    percent: float | None = None
    if isinstance(size, int) and not isinstance(size, bool):
        count = size
    elif isinstance(size, str) and re.fullmatch(r"\d{1,7}", size):
        count = int(size)
    elif isinstance(size, str) and re.fullmatch(r"\d{1,3}(\.\d{1,6})?%", size):
        percent = float(size[:-1])
    else:
        raise bad_request('canary must be a number of dead letters (10) or a percentage ("10%").')
    watch = doc.get("watch", DEFAULT_CANARY_WATCH)
    max_redeath = doc.get("max_redeath", 0)
    for key, value in (("watch", watch), ("max_redeath", max_redeath)):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise bad_request(f"{key} must be a number.")
    seed, force = _draw_options(doc)
    return Canary(
        count=count,
        percent=percent,
        watch=float(watch),
        max_redeath=float(max_redeath),
        pattern_id=pattern_id,
        seed=seed,
        force=force,
    )


def _draw_options(doc: dict[str, Any]) -> tuple[int | None, bool]:
    """A canary's `seed` (the draw's, to draw the same sample again) and `force` (a pattern
    flagged impure too)."""
    seed = doc.get("seed")
    if "seed" in doc and (
        isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32
    ):
        raise bad_request("seed must be an integer from 0 to 4294967295.")
    force = doc.get("force", False)
    if not isinstance(force, bool):
        raise bad_request("force must be true or false.")
    return seed, force
