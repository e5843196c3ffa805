"""SQS message actions: send, receive (long polling on the event loop), delete, visibility."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from functools import partial
from typing import Any

from deadletter.api.sqs import attributes as attrs
from deadletter.api.sqs import fifo as sqs_fifo
from deadletter.api.sqs import message_attributes as message_attrs
from deadletter.api.sqs import system_attributes as system_attrs
from deadletter.api.sqs.call import Call, batch_entries, entry_failure
from deadletter.api.sqs.errors import (
    SqsError,
    batch_error,
    from_engine,
    from_exception,
    invalid_parameter,
    invalid_value,
    missing_parameter,
)
from deadletter.api.sqs.receipts import parse_receipt_handle, receipt_handle, tagged_queue
from deadletter.api.threads import in_thread, on_loop
from deadletter.domain import errors
from deadletter.domain.model import (
    MAX_DELAY,
    Attribute,
    Claim,
    Message,
    NewMessage,
    Queue,
    QueueSettings,
)
from deadletter.domain.provenance import Provenance, Reason
from deadletter.engine import VisibilityChange

MAX_RECEIVE = 10  # messages per ReceiveMessage
# A long poll looks at its queue again at least this often (seconds), and this long after a
# hidden message's visibility time, so that the time has surely passed when it looks.
RECHECK = 2.0
VISIBILITY_SLACK = 0.01
# A message attribute (String "true" or "false") by which a producer marks a message eligible
# or not for the DLQ (an extension: SQS has no such flag). It stays on the message like any
# other attribute, so the digest the client computed still matches.
ELIGIBLE_ATTRIBUTE = "DeadLetterEligible"
INVALID_CHARACTERS = (
    "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF |"
    " #xE000 to #xFFFD | #x10000 to #x10FFFF"
)


def _new_message(params: dict[str, Any], clean: bool = False) -> NewMessage:
    """`clean`: the body is known to hold only characters SQS accepts (`Call.clean`)."""
    body = params.get("MessageBody")
    if not isinstance(body, str) or body == "":
        raise missing_parameter("MessageBody")
    if not clean:
        _check_body(body)
    delay = params.get("DelaySeconds")
    if delay is not None and delay != "":
        try:
            delay = int(str(delay))
        except ValueError:
            raise invalid_value(delay, "DelaySeconds", "Must be an integer.") from None
        if not 0 <= delay <= MAX_DELAY:
            raise invalid_value(
                delay, "DelaySeconds", f"DelaySeconds must be >= 0 and <= {MAX_DELAY}."
            )
    else:
        delay = None
    attributes = message_attrs.message_attributes_in(params.get("MessageAttributes"))
    system = system_attrs.system_attributes_in(params.get("MessageSystemAttributes"))
    group_id, dedup_id = sqs_fifo.fields(params)
    return NewMessage(
        body=body.encode(),
        delay=delay,
        attributes={**attributes, **system},
        dead_letter_eligible=_eligible(attributes.get(ELIGIBLE_ATTRIBUTE)),
        group_id=group_id,
        deduplication_id=dedup_id,
    )


def _checked(params: dict[str, Any], s: QueueSettings, clean: bool = False) -> NewMessage:
    """A send's message, checked against the queue as the engine would check it."""
    new = _new_message(params, clean)
    _size_check(new, s.max_message_size)
    sqs_fifo.check_send(new, params, s)
    return new


def _eligible(attribute: Attribute | None) -> bool | None:
    if attribute is None:
        return None
    value = attribute.value.strip().lower()
    if attribute.type.split(".", 1)[0] != "String" or value not in ("true", "false"):
        raise invalid_parameter(
            f"Message attribute {ELIGIBLE_ATTRIBUTE} must be a String, true or false."
        )
    return value == "true"


# What SQS refuses in a body, as one character class: a search runs in C, where a loop over
# the characters cost a twentieth of the face's CPU time per message.
_INVALID_BODY_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _check_body(body: str) -> None:
    """SQS accepts only #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000+."""
    if _INVALID_BODY_CHAR.search(body) is not None:
        raise SqsError("InvalidMessageContents", INVALID_CHARACTERS)


def _sent(m: Message, s: QueueSettings) -> dict[str, Any]:
    out: dict[str, Any] = {
        "MessageId": m.id,
        "MD5OfMessageBody": message_attrs.md5_of_bytes(m.body),
    }
    user, system = system_attrs.split(m.attributes)
    digest = message_attrs.md5_of_attributes(user)
    if digest:
        out["MD5OfMessageAttributes"] = digest
    system_digest = message_attrs.md5_of_attributes(system)
    if system_digest:
        out["MD5OfMessageSystemAttributes"] = system_digest
    if s.fifo:
        out["SequenceNumber"] = sqs_fifo.system_attributes(m)["SequenceNumber"]
    return out


def _size(message: NewMessage) -> int:
    """A message's size as SQS counts it: body, attribute names, types and values (system
    attributes do not count)."""
    user, _ = system_attrs.split(message.attributes)
    return len(message.body) + sum(
        len(k.encode()) + len(a.type.encode()) + len(a.value.encode()) for k, a in user.items()
    )


def _size_check(message: NewMessage, queue_max: int) -> None:
    limit = min(queue_max, attrs.MAX_SIZE)
    if _size(message) > limit:
        raise invalid_parameter(
            f"One or more parameters are invalid. Reason: Message must be shorter than"
            f" {limit} bytes."
        )


def send_message(call: Call) -> dict[str, Any]:
    """Checked against the queue's settings in the send's own transaction (one per request)."""
    queue, (stored,) = call.engine.send_prepared(
        call.project,
        call.queue(),
        prepare=lambda q: [_checked(call.params, q.settings, call.clean)],
    )
    return _sent(stored, queue.settings)


def _raw_size(entry: dict[str, Any]) -> int:
    """An entry's size as AWS adds up a batch, before anything in it is checked."""
    total = len(str(entry.get("MessageBody") or "").encode())
    attributes = entry.get("MessageAttributes")
    if isinstance(attributes, dict):
        for key, value in attributes.items():
            total += len(str(key).encode())
            if isinstance(value, dict):
                total += sum(len(str(v).encode()) for v in value.values())
    return total


def send_message_batch(call: Call) -> dict[str, Any]:
    name = call.queue()
    entries = batch_entries(call, "SendMessageBatch")
    total = sum(_raw_size(e) for e in entries)
    if total > attrs.MAX_SIZE:
        raise batch_error(
            "BatchRequestTooLong",
            f"Batch requests cannot be longer than {attrs.MAX_SIZE} bytes. You have sent"
            f" {total} bytes.",
        )
    good: list[tuple[str, NewMessage]] = []
    failed: list[dict[str, Any]] = []

    def prepare(queue: Queue) -> list[NewMessage]:
        """Each entry is checked here, as the engine would, so one bad entry fails alone in
        `Failed` instead of refusing the whole batch; runs in the send's transaction."""
        good.clear()
        failed.clear()
        for e in entries:
            try:
                good.append((e["Id"], _checked(e, queue.settings, call.clean)))
            except SqsError as exc:
                failed.append(entry_failure(e["Id"], exc))
        return [new for _, new in good]

    # A bounded queue takes or refuses each entry in turn, as AWS reports a batch per entry.
    queue, outcomes = call.engine.send_each(call.project, name, prepare=prepare)
    successful = []
    for (entry_id, _), outcome in zip(good, outcomes, strict=False):
        if isinstance(outcome, errors.QueueFull):
            failed.append(entry_failure(entry_id, from_engine(outcome)))
        else:
            successful.append({"Id": entry_id, **_sent(outcome, queue.settings)})
    return {"Successful": successful, "Failed": failed}


# The engine's ids are UUIDs (names.ID); a handle naming anything else cannot be one of ours.


# Why a dead letter died and what its consumer said went wrong, shown on it as message
# attributes (SQS has no reject to give them with; see docs/sqs.md): the reason is the
# engine's (`rejected` for a consumer's dead-lettering), the description the consumer's own
# words. Reserved: no sender can set a DLQ.* name.
PROVENANCE_ATTRIBUTES = {
    "DLQ.reason": "reason",
    "DLQ.description": "description",
    "DLQ.errorMessage": "error",
    "DLQ.errorClass": "error_class",
    "DLQ.errorStack": "error_stack",
}


def _provenance_attributes(p: Provenance) -> dict[str, Attribute]:
    values = {name: getattr(p, field) for name, field in PROVENANCE_ATTRIBUTES.items()}
    return {
        name: Attribute("String", v.value if isinstance(v, Reason) else v)
        for name, v in values.items()
        if v
    }


def _received(
    call: Call, m: Message, *, claim_id: str, system: list[str], user: list[str], tag: str | None
) -> Any:
    try:
        body, body_digest = m.body.decode(), message_attrs.md5_of_bytes(m.body)
    except UnicodeDecodeError:  # not from SQS, whose bodies are text: the digest of what is shown
        body = m.body.decode("utf-8", errors="replace")
        body_digest = message_attrs.md5_of_body(body)
    out: dict[str, Any] = {
        "MessageId": m.id,
        "ReceiptHandle": receipt_handle(claim_id, m.id, tag),
        "MD5OfBody": body_digest,
        "Body": body,
    }
    stored, set_by_sender = system_attrs.split(m.attributes)
    if system:  # built only when asked for, as most receives do not
        available = {
            "ApproximateReceiveCount": str(m.claim_count),
            "ApproximateFirstReceiveTimestamp": str(int((m.first_claimed_at or 0) * 1000)),
            "SentTimestamp": str(int(m.enqueued_at * 1000)),
            "SenderId": m.client_id or call.account,
        }
        if m.provenance is not None:
            available["DeadLetterQueueSourceArn"] = call.arn(m.provenance.source_queue)
        available.update(sqs_fifo.system_attributes(m))
        available.update({k: a.value for k, a in set_by_sender.items()})
        every = "All" in system
        out["Attributes"] = {k: v for k, v in available.items() if every or k in system}
    if not user:  # none asked for, as most receives
        return out
    # The reserved DLQ.sourceQueue (and a tag's DLQ.sourceTag) as the dead letter carries
    # them, beside DeadLetterQueueSourceArn: a DLQ of several sources is filtered by them.
    own = dict(stored)
    if m.provenance is not None:
        own.update(_provenance_attributes(m.provenance))
    picked = message_attrs.wanted(user, own)
    if picked:
        out["MessageAttributes"] = message_attrs.message_attributes_out(picked)
        digest = message_attrs.md5_of_attributes(picked)
        if digest:
            out["MD5OfMessageAttributes"] = digest
    return out


async def receive_message(call: Call) -> dict[str, Any]:
    name, tag = tagged_queue(call.queue())
    limit = call.integer("MaxNumberOfMessages", 1, MAX_RECEIVE, 1)
    visibility = call.integer("VisibilityTimeout")  # its range: the engine's claim TTL
    wait = call.integer(
        "WaitTimeSeconds",
        0,
        attrs.MAX_RECEIVE_WAIT,
        reason=f"Must be >= 0 and <= {attrs.MAX_RECEIVE_WAIT}, if provided.",
    )
    system = call.attribute_names("AttributeNames") + call.attribute_names(
        "MessageSystemAttributeNames"
    )
    user = call.attribute_names("MessageAttributeNames")
    assert limit is not None
    claim_now = partial(call.engine.claim, call.project, name, limit=limit, ttl=visibility, tag=tag)
    start = asyncio.get_running_loop().time()
    seen = call.notifier.announcements(call.project, name)
    try:
        claim = await on_loop(call.engine, claim_now)
    except errors.OutOfRange as exc:  # the only number not checked above
        raise visibility_refused(exc) from None
    if not claim.messages:
        if wait is None:  # the queue's own wait, read only when a receive must wait
            queue = await in_thread(call.engine.get_queue, call.project, name)
            wait = queue.settings.receive_wait
        if wait > 0:
            claim = await _long_poll(
                call, name, tag, claim_now, deadline=start + wait, claim=claim, seen=seen
            )
    if not claim.messages:
        return {}  # as SQS: no Messages member at all when nothing was received
    return {
        "Messages": [
            _received(call, m, claim_id=claim.id, system=system, user=user, tag=tag)
            for m in claim.messages
        ]
    }


async def _long_poll(
    call: Call,
    name: str,
    tag: str | None,
    claim_now: Callable[[], Claim],
    *,
    deadline: float,
    claim: Claim,
    seen: int,
) -> Claim:
    """After `claim` found nothing, claim again until messages come or the loop's clock
    reaches `deadline`, waiting between the claims for the queue's wake-ups. Only a receive
    that found nothing waits in line for the queue's announcements, so a send wakes no
    receive already answered, and only one of those waiting (`Notifier.competing`); one
    announced between that claim and the wait (`seen` no longer the count) is claimed at
    once."""
    loop_time = asyncio.get_running_loop().time
    async with call.notifier.competing(call.project, name, tag) as turn:
        if call.notifier.announcements(call.project, name) != seen:
            claim = await on_loop(call.engine, claim_now)
        while not claim.messages:
            remaining = deadline - loop_time()
            if remaining <= 0:
                break
            pause = remaining
            if turn.first:
                # New messages announce themselves (`turn`); a message whose visibility
                # timeout or delay ends does not, so the first in line also wakes when the
                # first one does, and at least every RECHECK (a change no one announces).
                upcoming = await in_thread(call.engine.next_visible_in, call.project, name)
                pause = min(remaining, RECHECK)
                if upcoming is not None:
                    pause = min(pause, upcoming + VISIBILITY_SLACK)
            await turn.wait(pause)
            claim = await on_loop(call.engine, claim_now)
        turn.took = bool(claim.messages)
    return claim


def delete_message(call: Call) -> dict[str, Any]:
    name, _ = tagged_queue(call.queue())
    claim_id, message_id, tag = parse_receipt_handle(call.text("ReceiptHandle"))
    _delete(call, name, claim_id, message_id, tag)
    return {}


def _delete(call: Call, name: str, claim_id: str, message_id: str, tag: str | None) -> None:
    """SQS deletes with a stale handle without complaint; so does this (nothing is removed
    when someone else holds the message since)."""
    with contextlib.suppress(errors.MessageNotFound):
        call.engine.delete_message(
            call.project, name, message_id=message_id, claim_id=claim_id, strict=False, tag=tag
        )


def delete_message_batch(call: Call) -> dict[str, Any]:
    """All valid entries are deleted in one transaction, whichever consumer tags their
    handles name. A missing queue refuses the whole request, as for the visibility batch."""
    name, _ = tagged_queue(call.queue())
    try:
        entries = batch_entries(call, "DeleteMessageBatch")
    except SqsError:
        call.engine.get_queue(call.project, name)
        raise
    failed = []
    named: list[str] = []  # the entry ids of `held`
    held: list[tuple[str, str | None, str | None]] = []  # (message id, claim id, tag)
    for e in entries:
        try:
            claim_id, message_id, tag = parse_receipt_handle(e.get("ReceiptHandle"))
        except SqsError as exc:
            failed.append(entry_failure(e["Id"], exc))
            continue
        named.append(e["Id"])
        held.append((message_id, claim_id, tag))
    if held:
        results = call.engine.acknowledge(call.project, name, held=held, strict=False)
    else:
        call.engine.get_queue(call.project, name)
        results = []
    outcomes = list(zip(named, results, strict=True))
    successful = []
    for entry_id, result in outcomes:
        # A stale handle or a message already gone is no error on SQS either.
        if isinstance(result, errors.DeadletterError) and not isinstance(
            result, errors.MessageNotFound
        ):
            failed.append(entry_failure(entry_id, from_exception(result)))
        else:
            successful.append({"Id": entry_id})
    return {"Successful": successful, "Failed": failed}


def _visibility_change(params: dict[str, Any]) -> VisibilityChange:
    """(message id, claim id, timeout, consumer tag) of one change, checked as SQS checks it
    (the timeout's range is the engine's: see `visibility_refused`)."""
    claim_id, message_id, tag = parse_receipt_handle(params.get("ReceiptHandle"))
    raw = params.get("VisibilityTimeout")
    if raw is None or raw == "":
        raise missing_parameter("VisibilityTimeout")
    try:
        timeout = int(str(raw))
    except ValueError:
        raise invalid_value(raw, "VisibilityTimeout", "Must be an integer.") from None
    return message_id, claim_id, timeout, tag


def visibility_refused(exc: errors.OutOfRange) -> SqsError:
    """The engine's refusal of a claim's TTL, in the words SQS has for a VisibilityTimeout."""
    return invalid_value(
        exc.value, "VisibilityTimeout", f"Must be between {exc.low} and {exc.high}, if provided."
    )


def change_message_visibility(call: Call) -> dict[str, Any]:
    name, _ = tagged_queue(call.queue())
    message_id, claim_id, timeout, tag = _visibility_change(call.params)
    try:
        call.engine.change_visibility(
            call.project, name, message_id=message_id, claim_id=claim_id, timeout=timeout, tag=tag
        )
    except errors.OutOfRange as exc:
        raise visibility_refused(exc) from None
    return {}


def change_message_visibility_batch(call: Call) -> dict[str, Any]:
    """Every entry is checked first; those that pass change in one transaction, each
    succeeding or failing alone. A missing queue refuses the whole request, before anything
    about its entries (read on its own only when no entry reaches the engine)."""
    name, _ = tagged_queue(call.queue())
    try:
        entries = batch_entries(call, "ChangeMessageVisibilityBatch")
    except SqsError:
        call.engine.get_queue(call.project, name)
        raise
    outcomes: dict[str, SqsError | None] = {}
    valid: list[tuple[str, VisibilityChange]] = []
    for e in entries:
        try:
            valid.append((e["Id"], _visibility_change(e)))
            outcomes[e["Id"]] = None
        except SqsError as exc:
            outcomes[e["Id"]] = exc
    if valid:
        changes = [change for _, change in valid]
        results = call.engine.change_visibilities(call.project, name, changes=changes)
        for (entry_id, _), result in zip(valid, results, strict=True):
            if isinstance(result, errors.OutOfRange):
                outcomes[entry_id] = visibility_refused(result)
            elif isinstance(result, errors.DeadletterError):
                outcomes[entry_id] = from_exception(result)
    else:
        call.engine.get_queue(call.project, name)
    successful = [{"Id": entry_id} for entry_id, error in outcomes.items() if error is None]
    failed = [entry_failure(i, error) for i, error in outcomes.items() if error is not None]
    return {"Successful": successful, "Failed": failed}
