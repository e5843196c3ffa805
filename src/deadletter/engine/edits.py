"""Edits of dead letters: a patch of one dead letter's body or attributes, or of every dead
letter a redrive moves (its transform), each kept in the dead letter's history with who and
when, and the first with what the message was before any edit.

A patch is applied to the document `{"body": <body>, "attributes": {name: {"type", "value"}}}`:
the body as JSON where it is JSON (Zaqar's messages), else as its text (SQS's); the
attributes without the reserved `DLQ.` ones, which the server writes and no edit changes.
JSON Merge Patch (RFC 7396) is the algorithm of its section 2, written out below: it is ten
lines, and the Python libraries that offer it add nothing to them. JSON Patch (RFC 6902) is
the `jsonpatch` library's.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import jsonpatch
import jsonpointer

from deadletter.domain import errors
from deadletter.domain.model import RESERVED_ATTRIBUTE_PREFIX, Attribute, Message
from deadletter.domain.redrive import MessagePatch, PatchKind
from deadletter.engine.selection import decode_body
from deadletter.engine.validation import check_attributes

PATCH_KEYS = frozenset({"body", "attributes"})


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396, section 2: an object patches member by member (null removes one), anything
    else replaces the target."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def document(m: Message) -> dict[str, Any]:
    """What a patch of `m` applies to."""
    return {
        "body": decode_body(m.body),
        "attributes": {k: a.to_dict() for k, a in m.attributes.items() if not _reserved(k)},
    }


def check(patch: MessagePatch) -> None:
    """A patch's form, before anything is read: a merge patch is an object of `body` and
    `attributes`, a JSON Patch a list of operations the library takes."""
    if patch.kind is PatchKind.MERGE:
        if not isinstance(patch.document, dict) or not patch.document:
            raise errors.InvalidPatch(
                'a merge patch is a JSON object of "body", "attributes" or both'
            )
        unknown = sorted(set(patch.document) - PATCH_KEYS)
        if unknown:
            raise errors.InvalidPatch(
                f'a patch changes the body and the attributes only, not "{unknown[0]}"'
            )
        named = patch.document.get("attributes")
        _refuse_reserved(named if isinstance(named, dict) else {})
        return
    try:
        jsonpatch.JsonPatch(patch.document)
    except (jsonpatch.InvalidJsonPatch, jsonpointer.JsonPointerException, TypeError) as exc:
        raise errors.InvalidPatch(f"not a JSON Patch: {exc}") from None
    if not isinstance(patch.document, list) or not patch.document:
        raise errors.InvalidPatch("a JSON Patch is a list of one or more operations")
    paths = [op.get(k) for op in patch.document for k in ("path", "from")]
    prefix = "/attributes/"
    _refuse_reserved(
        [
            p[len(prefix) :].split("/")[0]
            for p in paths
            if isinstance(p, str) and p.startswith(prefix)
        ]
    )


def _refuse_reserved(names: Any) -> None:
    """The `DLQ.` attributes are the server's record of where a dead letter came from."""
    for name in names:
        if _reserved(name):
            raise errors.ReservedAttribute(
                f"attribute {name!r}: the {RESERVED_ATTRIBUTE_PREFIX!r} attributes are"
                " reserved to the server, which no edit changes"
            )


def edited(
    m: Message,
    patch: MessagePatch,
    *,
    by: dict[str, Any],
    now: float,
    max_size: int,
    task_id: str | None = None,
) -> Message:
    """`m` with `patch` applied, one `edited` event more in its history (who, when, the
    patch; the first edit also keeps the body and attributes as they were). Refused whole
    when the result is no message or is larger than `max_size` bytes."""
    before = document(m)
    if patch.kind is PatchKind.MERGE:
        after = merge_patch(before, patch.document)
    else:
        try:
            after = jsonpatch.apply_patch(before, patch.document)
        except (jsonpatch.JsonPatchConflict, jsonpatch.JsonPatchTestFailed) as exc:
            raise errors.PatchConflict(f"the JSON Patch does not apply: {exc}") from None
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise errors.InvalidPatch(f"the JSON Patch does not apply: {exc}") from None
    if not isinstance(after, dict) or set(after) != PATCH_KEYS:
        raise errors.InvalidPatch("a patch keeps the body and the attributes (it may change them)")
    body = _body(m.body, before["body"], after["body"])
    attributes = _attributes(after["attributes"])
    kept = {k: a for k, a in m.attributes.items() if _reserved(k)}
    size = len(body) + sum(len(k) + len(a.type) + len(a.value) for k, a in attributes.items())
    if size > max_size:
        raise errors.MessageTooLarge(
            f"the edited message of {size} bytes exceeds its queue's maximum of {max_size}"
        )
    written = {"type": patch.kind.value, "document": patch.document}
    event: dict[str, Any] = {"event": "edited", "at": now, "by": by, "patch": written}
    if task_id is not None:
        event["task_id"] = task_id
    if not any(e.get("event") == "edited" for e in m.history):
        event["original"] = before
    return replace(m, body=body, attributes={**attributes, **kept}, history=(*m.history, event))


def _body(raw: bytes, was: Any, now: Any) -> bytes:
    """A text body that stays text is stored as text (an SQS consumer reads it as it was
    sent); anything else as compact JSON, as the Zaqar face stores a body."""
    if isinstance(now, str) and isinstance(was, str) and decode_body(raw) == was:
        try:
            json.loads(raw)
        except ValueError:
            return now.encode()
    return json.dumps(now, ensure_ascii=False, separators=(",", ":")).encode()


def _attributes(given: Any) -> dict[str, Attribute]:
    if not isinstance(given, dict):
        raise errors.InvalidPatch('"attributes" must be an object of {"type", "value"} each')
    out: dict[str, Attribute] = {}
    for name, value in given.items():
        if (
            not isinstance(value, dict)
            or set(value) != {"type", "value"}
            or not all(isinstance(v, str) for v in value.values())
        ):
            raise errors.InvalidPatch(
                f'attribute {name!r} must be {{"type": "String", "value": "..."}}'
                " (type String, Number or Binary)"
            )
        out[name] = Attribute(value["type"], value["value"])
    check_attributes(out)
    return out


def _reserved(name: str) -> bool:
    return name.upper().startswith(RESERVED_ATTRIBUTE_PREFIX)
